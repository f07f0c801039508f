// The console's pages, in nav order. A page is one ES module in this folder registered
// here and nowhere else. Its default export is
//     { title, mount(root, route) }
// where `route` is { page, args: [path segments after the page], query: URLSearchParams },
// and which returns a cleanup function, or { update(route), unmount() } to take route changes
// within the page (e.g. another tool selected) without being mounted again.
// An entry without a module shows as a nav slot that is not built yet.

export const PAGES = [
  { id: 'servers', title: 'Servers', module: './servers.js' },
  { id: 'tools', title: 'Tools', module: './tools.js' },
  { id: 'resources', title: 'Resources', module: './resources.js' },
  { id: 'prompts', title: 'Prompts', module: './prompts.js' },
  { id: 'profiles', title: 'Profiles', module: './profiles.js' },
  { id: 'chat', title: 'Chat', module: './chat.js' },
  { id: 'traffic', title: 'Traffic', module: './traffic.js' },
  { id: 'logs', title: 'Logs', module: './logs.js' },
  { id: 'history', title: 'History', module: './history.js' },
  { id: 'metrics', title: 'Metrics', module: './metrics.js' },
];
