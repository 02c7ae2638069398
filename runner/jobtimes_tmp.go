package runner

import "time"

// TEMPORARY until branch ops lands with the real ones (delete on merge).
func (j *Job) Submitted() time.Time { return time.Time{} }
func (j *Job) Ended() time.Time     { return time.Time{} }
