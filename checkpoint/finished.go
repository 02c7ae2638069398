package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// FinishedName is the file in a checkpoint root that says the job writing
// into it ended by itself (its inputs ended, or it was drained).
const FinishedName = "FINISHED"

// finished is FinishedName's content.
type finished struct {
	Job  string    `json:"job"`
	Time time.Time `json:"time"`
	// Last is the newest checkpoint in the root when the job ended: only a
	// newer one (of a later run) is restored from.
	Last ID `json:"last"`
}

// MarkFinished records that the job ended by itself, so that the next
// run of it starts over rather than resuming from a checkpoint taken
// before an end the run already reached. Checkpoints stay (for
// inspection); a later run numbers its checkpoints on after them, and
// once it completes one, that one is restored from again.
func (s *Storage) MarkFinished(now time.Time) error {
	ids, err := s.List()
	if err != nil {
		return err
	}
	var f finished
	f.Job, f.Time = s.job, now.UTC()
	if len(ids) > 0 {
		f.Last = ids[0]
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	// Written aside and renamed: a crash leaves the old file or the new.
	tmp := s.fs.PathJoin(s.dir, FinishedName+".tmp")
	if err := writeSynced(s.fs, tmp, b); err != nil {
		return fmt.Errorf("checkpoint: mark %s finished: %w", s.dir, err)
	}
	if err := s.fs.Rename(tmp, s.fs.PathJoin(s.dir, FinishedName)); err != nil {
		return fmt.Errorf("checkpoint: mark %s finished: %w", s.dir, err)
	}
	return syncDir(s.fs, s.dir)
}

// FinishedAt returns the newest checkpoint when the job last ended by
// itself, and whether it did (see MarkFinished).
func (s *Storage) FinishedAt() (ID, bool, error) {
	b, err := readAll(s.fs, s.fs.PathJoin(s.dir, FinishedName))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("checkpoint: read %s: %w", FinishedName, err)
	}
	var f finished
	if err := json.Unmarshal(b, &f); err != nil {
		return 0, false, fmt.Errorf("checkpoint: %s in %s: %w", FinishedName, s.dir, err)
	}
	return f.Last, true, nil
}
