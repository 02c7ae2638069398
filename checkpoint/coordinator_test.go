package checkpoint

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var twoTasks = []Task{{0, 0}, {1, 0}}

// step is one call on a coordinator at t0+at.
type step struct {
	at   time.Duration
	op   string // tick, ack, complete, fail
	id   ID     // ack, complete, fail: the checkpoint
	task Task   // ack
	// tick: the checkpoint it must trigger (0: none); ack: 1 if ready.
	want    ID
	wantErr string // substring; "" for no error
}

func run(t *testing.T, c *Coordinator, steps []step) {
	t.Helper()
	for i, s := range steps {
		now := t0.Add(s.at)
		var got ID
		var err error
		switch s.op {
		case "tick":
			var ok bool
			got, ok, err = c.Tick(now)
			if !ok {
				got = 0
			}
		case "ack":
			var ready bool
			ready, err = c.Ack(now, Ack{Task: s.task, ID: s.id, Arrival: now})
			if ready {
				got = 1
			}
		case "complete":
			_, err = c.Complete(now, s.id)
		case "finished":
			if c.Finished(now, s.task) {
				got = 1
			}
		case "fail":
			err = c.Fail(now, s.id, errors.New("disk full"))
		default:
			t.Fatalf("step %d: unknown op %q", i, s.op)
		}
		if s.wantErr == "" && err != nil {
			t.Fatalf("step %d (%s at %v): %v", i, s.op, s.at, err)
		}
		if s.wantErr != "" && (err == nil || !strings.Contains(err.Error(), s.wantErr)) {
			t.Fatalf("step %d (%s at %v): error %v, want one containing %q", i, s.op, s.at, err, s.wantErr)
		}
		if got != s.want {
			t.Fatalf("step %d (%s at %v): got %d, want %d", i, s.op, s.at, got, s.want)
		}
	}
}

func TestCoordinatorSchedule(t *testing.T) {
	sec := time.Second
	a, b := twoTasks[0], twoTasks[1]
	tests := []struct {
		name  string
		opts  Options
		steps []step
	}{
		{"first trigger one interval after start", Options{Interval: 10 * sec}, []step{
			{at: 0, op: "tick"},
			{at: 9 * sec, op: "tick"},
			{at: 10 * sec, op: "tick", want: 1},
		}},
		{"completes when every subtask acknowledged and stored", Options{Interval: 10 * sec}, []step{
			{at: 10 * sec, op: "tick", want: 1},
			{at: 11 * sec, op: "ack", id: 1, task: a},
			{at: 11 * sec, op: "complete", id: 1, wantErr: "1 of 2 subtasks"},
			{at: 12 * sec, op: "ack", id: 1, task: b, want: 1},
			{at: 12 * sec, op: "complete", id: 1},
			{at: 19 * sec, op: "tick"},
			{at: 20 * sec, op: "tick", want: 2},
		}},
		{"at most one in flight; an overdue trigger waits for the end", Options{Interval: 10 * sec}, []step{
			{at: 10 * sec, op: "tick", want: 1},
			{at: 20 * sec, op: "tick"},
			{at: 25 * sec, op: "tick"},
			{at: 26 * sec, op: "ack", id: 1, task: a},
			{at: 27 * sec, op: "ack", id: 1, task: b, want: 1},
			{at: 28 * sec, op: "tick"}, // ready, being stored: still in flight
			{at: 28 * sec, op: "complete", id: 1},
			{at: 28 * sec, op: "tick", want: 2},
		}},
		{"min pause after a long checkpoint", Options{Interval: 10 * sec, MinPause: 5 * sec}, []step{
			{at: 10 * sec, op: "tick", want: 1},
			{at: 18 * sec, op: "ack", id: 1, task: a},
			{at: 18 * sec, op: "ack", id: 1, task: b, want: 1},
			{at: 18 * sec, op: "complete", id: 1},
			{at: 20 * sec, op: "tick"},
			{at: 23 * sec, op: "tick", want: 2},
		}},
		{"timeout expires the pending checkpoint; none tolerated fails the job", Options{Interval: 10 * sec, Timeout: 30 * sec}, []step{
			{at: 10 * sec, op: "tick", want: 1},
			{at: 11 * sec, op: "ack", id: 1, task: a},
			{at: 39 * sec, op: "tick"},
			{at: 40 * sec, op: "tick", wantErr: "checkpoint 1: expired after 30s with 1 of 2 subtasks acknowledged"},
			{at: 50 * sec, op: "tick", wantErr: "too many consecutive"},
		}},
		{"tolerated failures reset by a success", Options{Interval: 10 * sec, Timeout: 5 * sec, TolerableFailures: 1}, []step{
			{at: 10 * sec, op: "tick", want: 1},
			{at: 15 * sec, op: "tick"},                // 1 expires: 1 in a row, tolerated
			{at: 15 * sec, op: "ack", id: 1, task: a}, // late: dropped
			{at: 20 * sec, op: "tick", want: 2},
			{at: 21 * sec, op: "ack", id: 2, task: a},
			{at: 21 * sec, op: "ack", id: 2, task: b, want: 1},
			{at: 21 * sec, op: "complete", id: 2},
			{at: 30 * sec, op: "tick", want: 3},
			{at: 31 * sec, op: "fail", id: 3}, // 1 in a row again
			{at: 40 * sec, op: "tick", want: 4},
			{at: 41 * sec, op: "fail", id: 4, wantErr: "2 in a row, 1 tolerated; the last, checkpoint 4: disk full"},
		}},
		{"a stored checkpoint does not expire", Options{Interval: 10 * sec, Timeout: 5 * sec}, []step{
			{at: 10 * sec, op: "tick", want: 1},
			{at: 11 * sec, op: "ack", id: 1, task: a},
			{at: 11 * sec, op: "ack", id: 1, task: b, want: 1},
			{at: 16 * sec, op: "tick"}, // still storing: not expired
			{at: 17 * sec, op: "complete", id: 1},
		}},
		{"a subtask that ended is not waited for", Options{Interval: 10 * sec}, []step{
			{at: 10 * sec, op: "tick", want: 1},
			{at: 11 * sec, op: "ack", id: 1, task: b},
			{at: 12 * sec, op: "finished", task: a, want: 1},
			{at: 12 * sec, op: "finished", task: a},
			{at: 12 * sec, op: "complete", id: 1},
			{at: 20 * sec, op: "tick", want: 2},
			{at: 21 * sec, op: "ack", id: 2, task: b, want: 1},
			{at: 21 * sec, op: "complete", id: 2},
		}},
		{"an acknowledged subtask that ends still counts", Options{Interval: 10 * sec}, []step{
			{at: 10 * sec, op: "tick", want: 1},
			{at: 11 * sec, op: "ack", id: 1, task: a},
			{at: 12 * sec, op: "finished", task: a},
			{at: 13 * sec, op: "ack", id: 1, task: b, want: 1},
			{at: 20 * sec, op: "complete", id: 1},
			{at: 21 * sec, op: "finished", task: b},
			{at: 30 * sec, op: "tick"}, // every subtask ended: nothing to checkpoint
		}},
		{"a checkpoint every subtask ended before acknowledging is dropped, not failed", Options{Interval: 10 * sec}, []step{
			{at: 10 * sec, op: "tick", want: 1},
			{at: 11 * sec, op: "finished", task: a},
			{at: 11 * sec, op: "finished", task: b},
			{at: 12 * sec, op: "complete", id: 1, wantErr: "not pending"},
			{at: 20 * sec, op: "tick"},
		}},
		{"bad acknowledgements", Options{Interval: 10 * sec}, []step{
			{at: 10 * sec, op: "tick", want: 1},
			{at: 11 * sec, op: "ack", id: 2, task: a, wantErr: "never triggered"},
			{at: 11 * sec, op: "ack", id: 1, task: Task{7, 7}, wantErr: "unknown subtask"},
			{at: 11 * sec, op: "ack", id: 1, task: a},
			{at: 11 * sec, op: "ack", id: 1, task: a, wantErr: "twice"},
			{at: 11 * sec, op: "complete", id: 2, wantErr: "not pending"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewCoordinator(tt.opts, twoTasks, t0)
			if err != nil {
				t.Fatal(err)
			}
			run(t, c, tt.steps)
		})
	}
}

func TestTooManyFailuresIsErrTooManyFailures(t *testing.T) {
	c, err := NewCoordinator(Options{Interval: time.Second}, twoTasks, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Tick(t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := c.Fail(t0.Add(2*time.Second), 1, errors.New("x")); !errors.Is(err, ErrTooManyFailures) {
		t.Fatalf("Fail = %v, want ErrTooManyFailures", err)
	}
}

func TestSwitchAt(t *testing.T) {
	trig := t0.Add(time.Minute)
	tests := []struct {
		mode    Mode
		timeout time.Duration
		want    time.Time
		ok      bool
	}{
		{Aligned, 0, time.Time{}, false},
		{Aligned, time.Second, time.Time{}, false},
		{Unaligned, 0, trig, true},
		{AlignedTimeout, 3 * time.Second, trig.Add(3 * time.Second), true},
	}
	for _, tt := range tests {
		at, ok := SwitchAt(tt.mode, tt.timeout, trig)
		if !at.Equal(tt.want) || ok != tt.ok {
			t.Errorf("SwitchAt(%v, %v) = %v, %v; want %v, %v", tt.mode, tt.timeout, at, ok, tt.want, tt.ok)
		}
	}
	c, err := NewCoordinator(Options{Interval: time.Second, Mode: AlignedTimeout, AlignedTimeout: 2 * time.Second}, twoTasks, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.SwitchAt(1); ok {
		t.Error("SwitchAt of a checkpoint not yet triggered says switch")
	}
	c.Tick(t0.Add(time.Second))
	if at, ok := c.SwitchAt(1); !ok || !at.Equal(t0.Add(3*time.Second)) {
		t.Errorf("SwitchAt(1) = %v, %v; want trigger + 2s", at, ok)
	}
}

func TestStatistics(t *testing.T) {
	c, err := NewCoordinator(Options{Interval: 10 * time.Second, History: 2}, twoTasks, t0)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		trig := t0.Add(time.Duration(round+1) * 10 * time.Second)
		id, ok, err := c.Tick(trig)
		if !ok || err != nil {
			t.Fatalf("round %d: Tick = %v, %v", round, ok, err)
		}
		c.Ack(trig.Add(time.Second), Ack{Task: twoTasks[0], ID: id, Arrival: trig.Add(100 * time.Millisecond),
			Sync: time.Millisecond, Async: 20 * time.Millisecond, Bytes: 1000})
		ready, err := c.Ack(trig.Add(2*time.Second), Ack{Task: twoTasks[1], ID: id, Arrival: trig.Add(300 * time.Millisecond),
			Alignment: 50 * time.Millisecond, Sync: 2 * time.Millisecond, Async: 10 * time.Millisecond,
			Bytes: 500, InFlightBytes: 200, Unaligned: true})
		if !ready || err != nil {
			t.Fatalf("round %d: last Ack = %v, %v", round, ready, err)
		}
		if p, ok := c.Pending(); !ok || p.ID != id || len(p.Subtasks) != 2 {
			t.Fatalf("round %d: Pending = %+v, %v", round, p, ok)
		}
		st, err := c.Complete(trig.Add(3*time.Second), id)
		if err != nil {
			t.Fatal(err)
		}
		if d := st.Duration(time.Time{}); d != 3*time.Second {
			t.Errorf("round %d: duration %v, want 3s", round, d)
		}
		want := Summary{Bytes: 1500, InFlightBytes: 200, UnalignedSubtasks: 1, MaxStartDelay: 300 * time.Millisecond,
			MaxAlignment: 50 * time.Millisecond, MaxSync: 2 * time.Millisecond, MaxAsync: 20 * time.Millisecond,
			AckedSubtasks: 2, TotalSubtasks: 2}
		if got := st.Summary(); got != want {
			t.Errorf("round %d: summary\n got %+v\nwant %+v", round, got, want)
		}
		if st.Subtasks[0].StartDelay != 100*time.Millisecond || st.Status != Completed {
			t.Errorf("round %d: subtask 0 start delay %v, status %v", round, st.Subtasks[0].StartDelay, st.Status)
		}
	}
	h := c.History()
	if len(h) != 2 || h[0].ID != 2 || h[1].ID != 3 {
		t.Errorf("History keeps %d, ids %v; want the last 2", len(h), h)
	}
	if done, failed := c.Counts(); done != 3 || failed != 0 {
		t.Errorf("Counts = %d, %d; want 3, 0", done, failed)
	}
}

func TestOptionsValidate(t *testing.T) {
	bad := []Options{
		{},
		{Interval: time.Second, TolerableFailures: -1},
		{Interval: time.Second, MinPause: -1},
		{Interval: time.Second, Mode: AlignedTimeout},
		{Interval: time.Second, Mode: Mode(9)},
	}
	for _, o := range bad {
		if _, err := NewCoordinator(o, twoTasks, t0); err == nil {
			t.Errorf("NewCoordinator(%+v) accepted bad options", o)
		}
	}
	if _, err := NewCoordinator(Options{Interval: time.Second}, nil, t0); err == nil {
		t.Error("NewCoordinator without subtasks succeeded")
	}
	if _, err := NewCoordinator(Options{Interval: time.Second}, []Task{{0, 0}, {0, 0}}, t0); err == nil {
		t.Error("NewCoordinator with a subtask twice succeeded")
	}
	for _, s := range []string{"aligned", "unaligned", "aligned-timeout"} {
		if m, err := ParseMode(s); err != nil || m.String() != s {
			t.Errorf("ParseMode(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := ParseMode("sideways"); err == nil {
		t.Error("ParseMode accepted sideways")
	}
}

func TestFirstIDContinuesNumbering(t *testing.T) {
	c, err := NewCoordinator(Options{Interval: time.Second, FirstID: 8}, twoTasks, t0)
	if err != nil {
		t.Fatal(err)
	}
	if id, ok, _ := c.Tick(t0.Add(time.Second)); !ok || id != 8 {
		t.Fatalf("first checkpoint %d, want 8", id)
	}
}
