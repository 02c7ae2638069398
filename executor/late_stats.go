package executor

// LateStats is one transform's account of late data as it stands.
type LateStats struct {
	ID, Name string
	// Source says the transform is a source, which records arrivals only.
	Source                     bool
	DroppedLate, DroppedClosed int64
	// Arrivals is how many arrival delays were observed; the quantiles
	// are in milliseconds.
	Arrivals             int64
	P50, P99, MaxArrival int64
}

// Stats returns every transform's account, in the order they were made.
func (l *LateData) Stats() []LateStats {
	ts, sources := l.accounts()
	out := make([]LateStats, len(ts))
	for i, t := range ts {
		s := t.Arrivals.Snapshot()
		out[i] = LateStats{ID: t.ID, Name: t.Name, Source: sources[i],
			DroppedLate: t.droppedLate.Load(), DroppedClosed: t.droppedClosed.Load(), Arrivals: s.Count}
		if s.Count > 0 {
			out[i].P50, out[i].P99, out[i].MaxArrival = s.Quantile(0.5), s.Quantile(0.99), s.Max
		}
	}
	return out
}
