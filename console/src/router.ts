import { useEffect, useState } from 'preact/hooks';

/** The console's pages live under /console/; the server answers index.html for each of them. */
const BASE = '/console/';

export function currentRoute(): string {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : '';
  return path.replace(/\/+$/, '') || 'billing';
}

export function navigate(route: string): void {
  history.pushState(null, '', BASE + route);
  dispatchEvent(new PopStateEvent('popstate'));
}

/** The route shown, following links and the browser's back and forward buttons. */
export function useRoute(): string {
  const [route, setRoute] = useState(currentRoute());
  useEffect(() => {
    const follow = () => setRoute(currentRoute());
    addEventListener('popstate', follow);
    return () => removeEventListener('popstate', follow);
  }, []);
  return route;
}

/** A link inside the console: followed without a reload (a reload would sign out). */
export function onLink(route: string) {
  return (event: MouseEvent) => {
    if (event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    navigate(route);
  };
}

export const href = (route: string) => BASE + route;
