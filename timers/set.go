package timers

import (
	"container/heap"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// Domain is the time a timer is set in.
type Domain uint8

// Time domains.
const (
	EventTime Domain = iota
	ProcessingTime
)

// Timer is one live timer.
type Timer struct {
	Transform string
	Family    string
	Domain    Domain
	Key       []byte
	Window    []byte
	Tag       []byte
	Fire      mtime.Time
	Hold      mtime.Time
	// Encoded is the timer as the SDK sent it, to hand back when it fires.
	Encoded []byte
}

type id struct{ transform, family, key, window, tag string }

func idOf(t *Timer) id {
	return id{t.Transform, t.Family, string(t.Key), string(t.Window), string(t.Tag)}
}

type item struct {
	t    Timer
	seq  uint64
	fire int // index in the domain's fire heap
	hold int // index in the hold heap
}

// Set holds live timers. The zero value is not usable; call New.
type Set struct {
	live  map[id]*item
	fires [2]fireHeap
	holds holdHeap
	seq   uint64
}

// New returns an empty set.
func New() *Set { return &Set{live: map[id]*item{}} }

// Len returns the number of live timers.
func (s *Set) Len() int { return len(s.live) }

// Set makes t the live timer of its family, key, window and tag,
// replacing any earlier one.
func (s *Set) Set(t Timer) {
	s.Clear(t.Transform, t.Family, t.Key, t.Window, t.Tag)
	s.seq++
	it := &item{t: t, seq: s.seq}
	s.live[idOf(&t)] = it
	heap.Push(&s.fires[t.Domain], it)
	heap.Push(&s.holds, it)
}

// Has reports whether a family, key, window and tag has a live timer. It
// allocates nothing, so a caller may ask for every element it sees.
func (s *Set) Has(transform, family string, key, window, tag []byte) bool {
	_, ok := s.live[id{transform, family, string(key), string(window), string(tag)}]
	return ok
}

// Clear removes the live timer of a family, key, window and tag, if any.
func (s *Set) Clear(transform, family string, key, window, tag []byte) {
	k := id{transform, family, string(key), string(window), string(tag)}
	it, ok := s.live[k]
	if !ok {
		return
	}
	delete(s.live, k)
	heap.Remove(&s.fires[it.t.Domain], it.fire)
	heap.Remove(&s.holds, it.hold)
}

// Due removes and returns the timers of domain d that are due at now, in
// fire-time order (ties in the order they were set). An event-time timer
// is due once the input watermark has passed it (Fire < now); a
// processing-time timer once the clock reaches it (Fire <= now).
func (s *Set) Due(d Domain, now mtime.Time) []Timer {
	var out []*item
	h := &s.fires[d]
	for h.Len() > 0 {
		it := (*h)[0]
		if d == EventTime && it.t.Fire >= now || d == ProcessingTime && it.t.Fire > now {
			break
		}
		heap.Pop(h)
		heap.Remove(&s.holds, it.hold)
		delete(s.live, idOf(&it.t))
		out = append(out, it)
	}
	sort.SliceStable(out, func(i, j int) bool { return less(out[i], out[j]) })
	ts := make([]Timer, len(out))
	for i, it := range out {
		ts[i] = it.t
	}
	return ts
}

// Next returns the earliest fire time in domain d.
func (s *Set) Next(d Domain) (mtime.Time, bool) {
	if s.fires[d].Len() == 0 {
		return 0, false
	}
	return s.fires[d][0].t.Fire, true
}

// Hold returns the least output-timestamp hold of the live timers, or
// MaxTimestamp when there are none: the stage's output watermark stays at
// or below it.
func (s *Set) Hold() mtime.Time {
	if s.holds.Len() == 0 {
		return mtime.MaxTimestamp
	}
	return s.holds[0].t.Hold
}

func less(a, b *item) bool {
	if a.t.Fire != b.t.Fire {
		return a.t.Fire < b.t.Fire
	}
	return a.seq < b.seq
}

type fireHeap []*item

func (h fireHeap) Len() int           { return len(h) }
func (h fireHeap) Less(i, j int) bool { return less(h[i], h[j]) }
func (h fireHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].fire, h[j].fire = i, j
}
func (h *fireHeap) Push(x any) { it := x.(*item); it.fire = len(*h); *h = append(*h, it) }
func (h *fireHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

type holdHeap []*item

func (h holdHeap) Len() int           { return len(h) }
func (h holdHeap) Less(i, j int) bool { return h[i].t.Hold < h[j].t.Hold }
func (h holdHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hold, h[j].hold = i, j
}
func (h *holdHeap) Push(x any) { it := x.(*item); it.hold = len(*h); *h = append(*h, it) }
func (h *holdHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// All returns the live timers in the order they were set, so that a
// checkpoint can hold them and Set, called in that order, rebuilds the
// same set (ties between equal fire times keep their order).
func (s *Set) All() []Timer {
	items := make([]*item, 0, len(s.live))
	for _, it := range s.live {
		items = append(items, it)
	}
	sort.Slice(items, func(i, j int) bool { return items[i].seq < items[j].seq })
	out := make([]Timer, len(items))
	for i, it := range items {
		out[i] = it.t
	}
	return out
}
