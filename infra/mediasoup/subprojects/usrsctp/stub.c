/* Empty: see meson.build. */
