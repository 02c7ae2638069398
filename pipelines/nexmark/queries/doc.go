// Package queries holds Nexmark's queries as Beam Go transforms, one file
// each, after Beam's Java suite (sdks/java/testing/nexmark, queries):
//
//	0   pass through              ParDo, a coder round trip
//	1   currency conversion       ParDo
//	2   selection                 ParDo
//	3   local item suggestion     Flatten, user state and event-time timers
//	4   average price/category    WinningBids, sliding windows, Mean per key
//	5   hot items                 sliding windows, Count, a global combine
//	6   average price/seller      WinningBids, a count trigger, accumulating panes
//	7   highest bid               fixed windows, Max, a singleton side input
//	8   monitor new users         fixed windows, CoGroupByKey
//	9   winning bids              WinningBids (state and timers)
//	10  log to sharded files      AfterEach/OrFinally/AfterAny triggers, two GroupByKeys
//	11  user sessions             session windows, a count trigger, Count
//	12  processing-time windows   a processing-time trigger, Count
//	bounded_side_input_join       a map side input
//
// Each query registers itself (registry.go); Lookup finds one by name and
// Build adds it to a pipeline over a PCollection of model.Event. They run
// on any runner that runs the Go SDK's transforms, and in batch and
// streaming alike.
//
// Where the Go SDK lacks what Beam's query uses, the query does the
// closest faithful thing and its comment says how it differs. The main
// one: WinningBids (queries 4, 6, 9) needs a custom merging WindowFn,
// which the Go SDK does not have; it is a stateful DoFn with timers here
// (winningbids.go). Go's combines have no hot-key fanout (4, 5, 7).
// SessionSideInputJoin, optional in the suite, is not here.
package queries
