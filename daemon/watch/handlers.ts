import type { HandlerGroup } from '../http/handlers.js';
import type { WatchFeed } from './feed.js';

export function watchHandlers(feed: WatchFeed): HandlerGroup<'watch'> {
  return {
    watch: ({ org, reply }) => feed.open(org, reply),
  };
}
