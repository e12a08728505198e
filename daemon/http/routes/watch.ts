import type { HandlerGroup } from '../handlers.js';
import type { WatchFeed } from '../watch-feed.js';

export function watchHandlers(feed: WatchFeed): HandlerGroup<'watch' | 'watchSnapshot'> {
  return {
    watch: ({ org, reply }) => feed.open(org, reply),
    watchSnapshot: ({ org }) => feed.snapshot(org),
  };
}
