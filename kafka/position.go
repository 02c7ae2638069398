package kafka

// Position is where a reader stands: the next offset to read of every
// partition, and how many records it has delivered (a bounded read by
// MaxRecords counts on from there). A checkpoint records it through the
// source's Injector.OnSnapshot, taken between emissions, so every record
// before the offsets is downstream of the barrier; a restored job starts
// the reader there (ReaderOptions.Resume). Offsets are never committed to
// the broker for this: the checkpoint is the source of truth.
type Position struct {
	// Next maps topic → partition → the next offset to read.
	Next map[string]map[int32]int64 `json:"next"`
	Read int64                      `json:"read,omitempty"`
}

// Position returns the reader's position now.
func (r *Reader) Position() Position {
	pos := Position{Next: map[string]map[int32]int64{}, Read: r.read}
	for _, p := range r.parts {
		if pos.Next[p.topic] == nil {
			pos.Next[p.topic] = map[int32]int64{}
		}
		pos.Next[p.topic][p.id] = p.next
	}
	return pos
}

// resume moves the partitions a restored position lists to its offsets.
func (r *Reader) resume(pos *Position) {
	if pos == nil {
		return
	}
	for i := range r.parts {
		p := &r.parts[i]
		if o, ok := pos.Next[p.topic][p.id]; ok {
			p.start, p.next = o, o
		}
	}
	r.read = pos.Read
}
