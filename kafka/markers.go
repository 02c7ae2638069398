package kafka

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/weir-runner/weir/executor"
)

// Markers are an exactly-once sink's markers, kept as the metadata of its
// marker group's offset commit: for each recent run (twophase.Session.Run,
// new at every start of the job), the epoch M below which that run has
// committed everything. Oldest first. A run's marker says nothing of
// another run's epochs: a restored job numbers epochs again from its
// checkpoint.
type Markers []RunMarker

// RunMarker is one run's marker.
type RunMarker struct {
	Run    string
	Marker executor.BarrierID
}

// maxMarkers bounds the runs kept: the metadata must stay under the
// broker's offset.metadata.max.bytes (4096 by default), and a restore
// reaches back only as far as the checkpoints it keeps. A restore to a
// checkpoint of a run no longer kept commits its committables again.
const maxMarkers = 32

const markersPrefix = "weir exactly-once sink v2:"

// Of returns run's marker; 0 if it has none.
func (ms Markers) Of(run string) executor.BarrierID {
	for _, m := range ms {
		if m.Run == run {
			return m.Marker
		}
	}
	return 0
}

// With returns ms with run's marker set to m, as the newest, dropping
// the oldest beyond maxMarkers.
func (ms Markers) With(run string, m executor.BarrierID) Markers {
	out := make(Markers, 0, len(ms)+1)
	for _, x := range ms {
		if x.Run != run {
			out = append(out, x)
		}
	}
	out = append(out, RunMarker{Run: run, Marker: m})
	if len(out) > maxMarkers {
		out = out[len(out)-maxMarkers:]
	}
	return out
}

// newest is the newest run's marker; 0 for none.
func (ms Markers) newest() executor.BarrierID {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Marker
}

// String is the metadata: "weir exactly-once sink v2: run=M run=M".
func (ms Markers) String() string {
	var b strings.Builder
	b.WriteString(markersPrefix)
	for _, m := range ms {
		fmt.Fprintf(&b, " %s=%d", m.Run, m.Marker)
	}
	return b.String()
}

// ParseMarkers reads the metadata String writes; anything else (another
// writer's, an older weir's) holds no marker of a run it could restore.
func ParseMarkers(meta string) Markers {
	rest, ok := strings.CutPrefix(meta, markersPrefix)
	if !ok {
		return nil
	}
	var ms Markers
	for _, f := range strings.Fields(rest) {
		run, n, ok := strings.Cut(f, "=")
		m, err := strconv.ParseUint(n, 10, 64)
		if !ok || err != nil || run == "" {
			continue
		}
		ms = append(ms, RunMarker{Run: run, Marker: executor.BarrierID(m)})
	}
	return ms
}
