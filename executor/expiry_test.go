package executor

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/fnapi/fnapitest"
	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/wire"
)

// expiryStage drives one subtask of an SDK stage whose stateful transform
// "t" has an event-time user timer family "user" and the OnWindowExpiration
// family "expire", over a fake worker standing in for the DoFn:
//
//   - each element sets the user timer of its key and window at the
//     window's max timestamp (an end-of-window timer), unless its key
//     starts with "-";
//   - each fired timer outputs "<family>:<key>" in its window at the
//     timer's hold timestamp, as Java's and Go's harnesses do.
//
// Each element also leaves one record of user state for its key and window
// in the store, as an SDK would through the state API, so that a script
// can see when the state of a window is collected. Everything that
// happens is written to a trace: the bundles the worker ran, what the
// stage emitted (data and watermarks) and the state left after each step.
type expiryStage struct {
	t        *testing.T
	lateness mtime.Time
	maxElems int
	store    *state.Store
	workers  *fakeWorkers
	spec     *SDKStageSpec
	st       *SDKStage
	out      chan envelope
	keyM     wire.Measure
	winM     wire.Measure
	codec    *wire.Codec
	timerC   *wire.TimerCodec

	mu    sync.Mutex // guards trace: the worker's goroutines write it
	trace []string
	// setExpire makes the worker set a timer of the expire family.
	setExpire bool

	outWM mtime.Time // the last watermark the stage emitted; guarded by mu

	wm      mtime.Time // the last watermark the script sent
	counter int        // state records written
}

func newExpiryStage(t *testing.T, lateness mtime.Time, global bool, maxElems int) *expiryStage {
	store, err := state.Open(state.Options{Dir: "db", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	srv, err := fnapi.NewServer(fnapi.Options{JobID: "job"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	coders := map[string]*pipepb.Coder{
		"key":    {Spec: &pipepb.FunctionSpec{Urn: wire.URNStringUTF8}},
		"window": {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:interval_window:v1"}},
	}
	h := &expiryStage{t: t, lateness: lateness, maxElems: maxElems, store: store, wm: mtime.MinTimestamp, outWM: mtime.MinTimestamp}
	if h.keyM, err = wire.MeasureFor(coders, "key"); err != nil {
		t.Fatal(err)
	}
	h.winM = func([]byte) (int, error) { return 0, nil }
	if !global {
		if h.winM, err = wire.MeasureFor(coders, "window"); err != nil {
			t.Fatal(err)
		}
	}
	h.codec = wire.NewCodec(h.winM, h.keyM) // elements and outputs: a string
	h.timerC = &wire.TimerCodec{Key: h.keyM, Window: h.winM}
	h.workers = &fakeWorkers{t: t, srv: srv, fake: func(int) *fnapitest.Worker {
		return &fnapitest.Worker{Echo: map[string]string{"src": "sink"}, Stateful: h.bundle}
	}}
	h.spec = &SDKStageSpec{Name: "stage", Env: "env", DescriptorID: "d", Source: "src",
		Sinks: []string{"sink"}, SinkCodecs: []*wire.Codec{h.codec}, MainCodec: h.codec,
		Workers: h.workers, MaxElems: maxElems,
		Key: func(e []byte) ([]byte, error) {
			v, err := h.codec.ValueOf(e)
			if err != nil {
				return nil, err
			}
			return v, nil
		},
		Stateful: &StatefulSpec{Transform: "t", StateIDs: []string{"s"}, AllowedLateness: lateness,
			Timers: []TimerFamilySpec{
				{ID: "expire", Codec: h.timerC},
				{ID: "user", Codec: h.timerC},
			},
			WindowExpiration: "expire"}}
	h.st = h.newStage()
	return h
}

func (h *expiryStage) newStage() *SDKStage {
	h.out = make(chan envelope, 1000)
	out := &Output{ports: [][]*edgeOut{{{part: Forward, to: []chan envelope{h.out}, chIdx: []int{0}}}}}
	st := NewSDKStage(h.spec, out)
	st.User = h.store.NewUserState("stage/0")
	return st
}

func (h *expiryStage) log(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logLocked(format, args...)
}

func (h *expiryStage) logLocked(format string, args ...any) {
	h.trace = append(h.trace, fmt.Sprintf(format, args...))
}

// fmtWindow writes a window as [start,end) or global.
func fmtWindow(w []byte) string {
	if len(w) == 0 {
		return "global"
	}
	start, end, err := wire.DecodeIntervalWindow(w)
	if err != nil {
		return fmt.Sprintf("bad window %x", w)
	}
	return fmt.Sprintf("[%d,%d)", start, end)
}

func fmtTS(t mtime.Time) string {
	switch t {
	case mtime.EndOfGlobalWindowTime:
		return "end"
	case mtime.MaxTimestamp:
		return "max"
	}
	return strconv.FormatInt(int64(t), 10)
}

func appendString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

// bundle is the fake DoFn (see expiryStage).
func (h *expiryStage) bundle(in fnapitest.BundleIn) fnapitest.BundleOut {
	// What earlier bundles emitted comes first in the trace.
	h.drain()
	out := fnapitest.BundleOut{Data: map[string][]byte{}, Timers: map[fnapitest.TimerFamily][]byte{}}
	user := fnapitest.TimerFamily{Transform: "t", Family: "user"}
	var elems []string
	for b := in.Data["src"]; len(b) > 0; {
		wv, n, err := h.codec.Decode(b, nil)
		if err != nil {
			h.t.Errorf("bundle input: %v", err)
			return out
		}
		b = b[n:]
		key := string(wv.Value[1:]) // after its one-byte length
		for _, w := range wv.Windows {
			elems = append(elems, key+"@"+fmtWindow(w))
			if strings.HasPrefix(key, "-") {
				continue
			}
			windows := append(binary.BigEndian.AppendUint32(nil, 1), w...)
			end := wire.WindowMaxTimestamp(w)
			out.Timers[user] = wire.AppendTimer(out.Timers[user], wv.Value, nil, windows, end, end, []byte{wire.PaneNoFiring})
		}
		if h.setExpire {
			expire := fnapitest.TimerFamily{Transform: "t", Family: "expire"}
			out.Timers[expire] = wire.AppendTimer(nil, wv.Value, nil, append(binary.BigEndian.AppendUint32(nil, 1), wv.Windows[0]...),
				100, 100, []byte{wire.PaneNoFiring})
		}
	}
	if len(elems) > 0 {
		h.log("elements %s", strings.Join(elems, " "))
	}
	for _, fam := range []string{"user", "expire"} {
		b := in.Timers[fnapitest.TimerFamily{Transform: "t", Family: fam}]
		var fired []string
		for len(b) > 0 {
			tm, n, err := h.timerC.Decode(b)
			if err != nil {
				h.t.Errorf("fired %s timer: %v", fam, err)
				return out
			}
			b = b[n:]
			key := string(tm.Key[1:])
			if fam == "expire" {
				// What Java's harness reads of it: one window, no tag, and a
				// pane.
				if len(tm.Tag) != 0 || binary.BigEndian.Uint32(tm.Windows) != 1 || len(tm.Pane) != 1 || tm.Pane[0] != wire.PaneNoFiring || tm.Clear {
					h.t.Errorf("expiration timer of %s: tag %q, windows %x, pane %x, clear %v; want no tag, one window, the no-firing pane",
						key, tm.Tag, tm.Windows, tm.Pane, tm.Clear)
				}
			}
			fired = append(fired, fmt.Sprintf("%s@%s fire %s hold %s", key, fmtWindow(tm.Window), fmtTS(tm.Fire), fmtTS(tm.Hold)))
			out.Data["sink"] = wire.AppendWindowedValue(out.Data["sink"], tm.Hold, tm.Window, []byte{wire.PaneNoFiring},
				appendString(nil, fam+":"+key))
		}
		if len(fired) == 0 {
			continue
		}
		n, err := h.store.Count(state.KindUserState)
		if err != nil {
			h.t.Error(err)
		}
		h.log("timers %s: %s (state %d)", fam, strings.Join(fired, ", "), n)
	}
	return out
}

// drain writes what the stage emitted to the trace, and fails the test if
// an element comes behind a watermark the stage emitted before it.
func (h *expiryStage) drain() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		select {
		case env := <-h.out:
			switch env.msg.Kind {
			case KindWatermark:
				h.outWM = env.msg.Watermark
				h.logLocked("wm %s", fmtTS(env.msg.Watermark))
			case KindData:
				for _, e := range env.msg.Elems {
					wv, _, err := h.codec.Decode(e, nil)
					if err != nil {
						h.t.Fatal(err)
					}
					if wv.Timestamp < h.outWM {
						h.t.Errorf("output %s at %s is late: the stage emitted watermark %s before it",
							wv.Value[1:], fmtTS(wv.Timestamp), fmtTS(h.outWM))
					}
					h.logLocked("out %s@%s", wv.Value[1:], fmtTS(wv.Timestamp))
				}
			}
		default:
			return
		}
	}
}

// parseElem reads key@start-end (an interval window, timestamp start) or
// key@global.
func (h *expiryStage) parseElem(s string) (key string, ts mtime.Time, window []byte) {
	key, w, _ := strings.Cut(s, "@")
	if w == "global" {
		return key, 0, nil
	}
	a, b, _ := strings.Cut(w, "-")
	start, err1 := strconv.ParseInt(a, 10, 64)
	end, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil {
		h.t.Fatalf("bad element %q", s)
	}
	return key, mtime.Time(start), wire.AppendIntervalWindow(nil, mtime.Time(start), mtime.Time(end))
}

// run applies one step of a script:
//
//	in e...   elements (see parseElem), each leaving a state record
//	wm t      the main input's watermark moves to t (max: the end of time)
//	restore   snapshot the stage and go on with a new one restored from it
//	finish    the input ends
func (h *expiryStage) run(ctx context.Context, step string) error {
	op, arg, _ := strings.Cut(step, " ")
	switch op {
	case "in":
		var batch [][]byte
		txn := h.st.User.Begin()
		for _, s := range strings.Fields(arg) {
			key, ts, w := h.parseElem(s)
			batch = append(batch, wire.AppendWindowedValue(nil, ts, w, []byte{wire.PaneNoFiring}, appendString(nil, key)))
			kv := appendString(nil, key)
			c := state.Cell{KeyGroup: KeyGroup(kv), Window: w, Key: kv, Transform: "t", StateID: "s"}
			h.counter++
			if err := txn.BagAppend(c, windowExpiry(w, h.lateness), []byte{byte(h.counter)}); err != nil {
				return err
			}
		}
		if err := txn.Commit(); err != nil {
			return err
		}
		return h.st.Process(ctx, 0, batch)
	case "wm":
		t := mtime.MaxTimestamp
		if arg != "max" {
			n, err := strconv.ParseInt(arg, 10, 64)
			if err != nil {
				return err
			}
			t = mtime.Time(n)
		}
		h.wm = t
		return h.st.Watermark(ctx, 0, t)
	case "restore":
		snap, err := h.st.SnapshotState(1)
		if err != nil {
			return err
		}
		h.st = h.newStage()
		if err := h.st.RestoreState(snap); err != nil {
			return err
		}
		// The gate hands a restored operator its recorded watermark.
		if h.wm > mtime.MinTimestamp {
			return h.st.Watermark(ctx, 0, h.wm)
		}
		return nil
	case "finish":
		return h.st.Finish(ctx)
	}
	return fmt.Errorf("unknown step %q", step)
}

// TestWindowExpiration runs scripts of elements and watermarks through a
// stateful stage with an OnWindowExpiration callback. Each step lists what
// follows from it: the bundles (elements, and fired timers with the user
// state records the store holds while they run), the stage's output and
// watermarks, and the state records left. Every script checks that the
// callback runs once per key and window, when the watermark passes the
// window's end plus the allowed lateness, after the user timers due then,
// with the window's state still there, which is collected right after; and
// that its output is never behind the stage's output watermark.
func TestWindowExpiration(t *testing.T) {
	type step struct {
		do   string
		want []string
	}
	for _, tc := range []struct {
		name     string
		lateness mtime.Time
		global   bool
		maxElems int
		script   []step
	}{{
		name: "fixed windows with allowed lateness", lateness: 5,
		script: []step{
			{"in a@0-10 b@0-10 a@10-20", nil},
			{"wm 5", []string{"elements a@[0,10) b@[0,10) a@[10,20)", "wm 5", "state 3"}},
			// A second element of a key and window adds no expiration.
			{"in a@0-10", nil},
			// The end-of-window timers fire; the expirations hold the
			// output at the window's max timestamp.
			{"wm 10", []string{"elements a@[0,10)",
				// Set again by the second element, a's timer comes second.
				"timers user: b@[0,10) fire 9 hold 9, a@[0,10) fire 9 hold 9 (state 4)",
				"out user:b@9", "out user:a@9", "wm 9", "state 4"}},
			// Expired at 9+5: due once the watermark is past 14.
			{"wm 14", []string{"state 4"}},
			{"wm 15", []string{
				"timers expire: a@[0,10) fire 14 hold 9, b@[0,10) fire 14 hold 9 (state 4)",
				"out expire:a@9", "out expire:b@9", "wm 15", "state 1"}},
			{"finish", []string{
				"timers user: a@[10,20) fire 19 hold 19 (state 1)", "out user:a@19",
				"timers expire: a@[10,20) fire 24 hold 19 (state 1)", "out expire:a@19",
				"state 0"}},
		},
	}, {
		name: "no lateness: the expiration comes after a user timer due at the same time",
		script: []step{
			{"in a@0-10 -b@0-10", nil},
			{"wm 10", []string{"elements a@[0,10) -b@[0,10)",
				"timers user: a@[0,10) fire 9 hold 9 (state 2)", "out user:a@9",
				"timers expire: a@[0,10) fire 9 hold 9, -b@[0,10) fire 9 hold 9 (state 2)",
				"out expire:a@9", "out expire:-b@9", "wm 10", "state 0"}},
		},
	}, {
		name: "restored from a checkpoint, each expiration fires once", lateness: 5,
		script: []step{
			{"in -a@0-10 -b@10-20", nil},
			{"wm 12", []string{"elements -a@[0,10) -b@[10,20)", "wm 9", "state 2"}},
			// A restored stage emits its output watermark afresh.
			{"restore", []string{"wm 9", "state 2"}},
			{"wm 15", []string{"timers expire: -a@[0,10) fire 14 hold 9 (state 2)", "out expire:-a@9", "wm 15", "state 1"}},
			{"restore", []string{"wm 15", "state 1"}},
			{"wm 30", []string{"timers expire: -b@[10,20) fire 24 hold 19 (state 1)", "out expire:-b@19", "wm 30", "state 0"}},
			{"finish", []string{"state 0"}},
		},
	}, {
		name: "the keys of a window expire in bundles of MaxElems", maxElems: 2,
		script: []step{
			{"in -a@0-10 -b@0-10 -c@0-10", []string{"elements -a@[0,10) -b@[0,10)"}},
			{"wm 10", []string{"elements -c@[0,10)",
				"timers expire: -a@[0,10) fire 9 hold 9, -b@[0,10) fire 9 hold 9 (state 3)",
				"out expire:-a@9", "out expire:-b@9",
				"timers expire: -c@[0,10) fire 9 hold 9 (state 3)", "out expire:-c@9",
				"wm 10", "state 0"}},
		},
	}, {
		name: "the global window expires at the end of time", lateness: 1000, global: true,
		script: []step{
			{"in -a@global", nil},
			{"wm 100", []string{"elements -a@global", "wm 100", "state 1"}},
			{"wm max", []string{"timers expire: -a@global fire end hold end (state 1)", "out expire:-a@end", "wm max", "state 0"}},
			{"finish", []string{"state 0"}},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newExpiryStage(t, tc.lateness, tc.global, tc.maxElems)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, s := range tc.script {
				if err := h.run(ctx, s.do); err != nil {
					t.Fatalf("%s: %v", s.do, err)
				}
				h.drain()
				if !strings.HasPrefix(s.do, "in") {
					n, err := h.store.Count(state.KindUserState)
					if err != nil {
						t.Fatal(err)
					}
					h.log("state %d", n)
				}
				h.mu.Lock()
				got := h.trace
				h.trace = nil
				h.mu.Unlock()
				if strings.Join(got, "\n") != strings.Join(s.want, "\n") {
					t.Fatalf("after %q:\n%s\nwant:\n%s", s.do, strings.Join(got, "\n"), strings.Join(s.want, "\n"))
				}
			}
		})
	}
}

// TestWindowExpirationSetBySDK: the expiration family's timers are the
// runner's; an SDK that sets one fails the stage with an error that says
// so, rather than have it fire as a user timer.
func TestWindowExpirationSetBySDK(t *testing.T) {
	h := newExpiryStage(t, 0, false, 0)
	h.setExpire = true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.run(ctx, "in a@0-10"); err != nil {
		t.Fatal(err)
	}
	err := h.run(ctx, "wm 5")
	if err == nil || !strings.Contains(err.Error(), "OnWindowExpiration family, which only the runner sets") {
		t.Fatalf("Watermark: %v, want an error saying the SDK set an expiration timer", err)
	}
}
