import type { HandlerGroup } from '../handlers.js';
import type { WatchFeed } from '../watch-feed.js';

export function watchHandlers(feed: WatchFeed): HandlerGroup<'watch'> {
  return {
    watch: ({ org, reply }) => feed.open(org, reply),
  };
}
