package runner

import (
	"strings"
	"time"

	"github.com/weir-runner/weir/jobview"
)

// viewMessages bounds the job messages a view carries: the newest.
const viewMessages = 200

// Summary returns the job as the job list shows it.
func (j *Job) Summary() jobview.Summary {
	state, _ := j.State()
	s := jobview.Summary{ID: string(j.ID), Name: j.Name, State: state.String(), Start: j.Submitted(), End: j.Ended(),
		Restarts: j.restarts.Load()}
	if err := j.Err(); err != nil {
		s.Error = err.Error()
	}
	end := s.End
	if end.IsZero() {
		end = time.Now()
	}
	if !s.Start.IsZero() {
		s.Seconds = end.Sub(s.Start).Seconds()
	}
	return s
}

// View returns the job's newest sample (see observe.go) with its summary
// and newest messages as they are now. A job that has not started running
// has only those. The view shares its slices with the sample, which no one
// changes: callers must not change them either.
func (j *Job) View() jobview.Job { return j.view(true) }

func (j *Job) view(messages bool) jobview.Job {
	var v jobview.Job
	if o := j.observed.Load(); o != nil {
		if last := o.latest(); last != nil {
			v = *last
		}
	}
	v.Summary = j.Summary()
	if !messages {
		return v
	}
	msgs, _, _ := j.Updates(0)
	if len(msgs) > viewMessages {
		msgs = msgs[len(msgs)-viewMessages:]
	}
	v.Messages = make([]jobview.Message, 0, len(msgs))
	for _, m := range msgs {
		t, _ := time.Parse(time.RFC3339Nano, m.GetTime())
		v.Messages = append(v.Messages, jobview.Message{Time: t, Importance: strings.TrimPrefix(m.GetImportance().String(), "JOB_MESSAGE_"), Text: m.GetMessageText()})
	}
	return v
}
