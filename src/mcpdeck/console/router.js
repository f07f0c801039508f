// Hash routes: #/page/arg1/arg2?key=value

export function parseRoute(hash = location.hash) {
  const [path, query = ''] = hash.replace(/^#\/?/, '').split('?');
  const [page = 'servers', ...args] = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { page, args, query: new URLSearchParams(query) };
}

/** Go to a page: navigate('tools', ['mcp__x__y'], {q: 'abc'}) */
export function navigate(page, args = [], query = {}) {
  location.hash = href(page, args, query);
}

export function href(page, args = [], query = {}) {
  const q = new URLSearchParams(query).toString();
  return `#/${[page, ...args].map(encodeURIComponent).join('/')}${q ? `?${q}` : ''}`;
}
