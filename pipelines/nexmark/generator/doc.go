// Package generator makes Nexmark's events: persons, auctions and bids of
// an online auction, with the ids, proportions, hot items, prices, string
// sizes, timestamps and out-of-orderness of Beam's Java generator
// (sdks/java/testing/nexmark, sources/generator). For the same
// configuration it makes the same events, bit for bit, as Beam Java does
// (TestMatchesBeamJava): each event's fields are drawn from a
// java.util.Random (ported in random.go) seeded with the event's id.
//
// The events are split over NumEventGenerators generators, as Beam's
// sources split them: generator i owns a block of event ids and runs on
// its own timeline from the base time, so the generators run side by side
// in event time. Generator i's n-th event is a pure function of the
// configuration, i and n (Generator.Event); nothing is carried from one
// event to the next. So a source can start anywhere, split anywhere, run
// on any runner and on any number of workers, and make the same events.
//
// A source's loop, for one restriction (a block of generators and a range
// of rows, row n being every generator's n-th event):
//
//	for n := first; n < end; n++ {
//		if rate limited, wait until DueMillis(n) after the start
//		for each generator i of the block with n < Count(i):
//			emit the events held back until row n (Release, HeldBefore)
//			e, ts := Event(i, n); emit e at ts unless it is held back
//		report Watermark(n+1)
//	}
//
// Watermark(n) is below every event of rows n and later (out-of-order
// groups included), so a source that reports it makes no late data;
// held-back events of a rate-limited stream are late by design.
//
// The package is pure: no I/O, no clock, no Beam.
package generator
