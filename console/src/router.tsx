// A small client-side router: paths under /console, History API, links that stay in the page.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

export const BASE = '/console';

export function navigate(path: string, replace = false): void {
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  window.dispatchEvent(new PopStateEvent('popstate'));
}

/** The current path and query string; re-renders on navigation. */
export function useLocation(): { path: string; search: URLSearchParams } {
  const [loc, setLoc] = useState(() => ({ path: location.pathname, search: location.search }));
  useEffect(() => {
    const on = () => setLoc({ path: location.pathname, search: location.search });
    window.addEventListener('popstate', on);
    return () => window.removeEventListener('popstate', on);
  }, []);
  return { path: loc.path.replace(/\/+$/, '') || '/', search: new URLSearchParams(loc.search) };
}

export function Link(props: { href: string; children: ComponentChildren; class?: string; 'aria-current'?: 'page' | undefined }) {
  return (
    <a {...props} onClick={(e) => {
      if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      e.preventDefault();
      navigate(props.href);
    }}>{props.children}</a>
  );
}

/** The page's heading: sets the document title and takes the focus when the page opens (screen readers hear where
 *  they are after a navigation). */
export function PageTitle({ children, title }: { children: ComponentChildren; title: string }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · Openline console`;
    ref.current?.focus();
  }, [title]);
  return <h1 ref={ref} tabIndex={-1}>{children}</h1>;
}
