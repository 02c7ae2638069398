// Package state is weir's keyed store: one Pebble database per job, holding
// what operators must not keep in Go memory, so a job's data can exceed
// memory. Memory is bounded by configuration (block cache and memtables),
// not by input size.
//
// Keys start with a namespace (the stage), then the key group, then the kind
// of record, so that everything one key group owns is one contiguous range
// and can move between subtasks on rescale:
//
//	namespace | key group (2 bytes) | kind (1 byte) | kind-specific suffix
//
// For shuffle buffers (KindShuffle) the suffix orders records by the end of
// their window, then by window and key, then by arrival, so firing every
// window that closed before a watermark is one forward scan and one range
// deletion per key group.
//
// Triggered windows (KindTriggerWindow) keep, per key and window, one
// metadata record and the window's values as blind appends (a merged
// session window may hold a member's values under that member's name,
// WindowID.Values, so that merging does not copy them); an index
// (KindTriggerIndex) orders them by the window's last instant, so the
// windows a watermark reaches, or expires, are one range scan. Like user
// state, these put the kind right after the namespace.
package state
