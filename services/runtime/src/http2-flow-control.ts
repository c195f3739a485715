import type http2 from "node:http2";

/**
 * The connection-level HTTP/2 receive window for internal hops, on both ends.
 *
 * `settings.initialWindowSize` only widens each stream's window; the connection's own window stays at
 * the protocol default of 64 KB unless the session calls setLocalWindowSize. Node replenishes that
 * window only when its event loop reads the socket, so with 64 KB a sender can have at most 64 KB in
 * flight per round trip through two busy event loops: with 64 concurrent 200-row pages (~58 KB of
 * protobuf each) the gateway got about one page per round trip and calls ran into their deadlines.
 * The window bounds bytes in flight, not memory held (each stream's own window does that), so it can
 * be generous: 64 pages of 200 rows fit with room to spare.
 */
export const CONNECTION_WINDOW_SIZE = 32 * 1024 * 1024;

/** Raises the session's connection-level receive window to CONNECTION_WINDOW_SIZE (sends one WINDOW_UPDATE). */
export function widenConnectionWindow(session: http2.Http2Session): void {
  if (session.destroyed || session.closed) return;
  session.setLocalWindowSize(CONNECTION_WINDOW_SIZE);
}
