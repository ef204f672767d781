// Empty: see meson.build.
