package filesource

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/fileio"
)

// stamper gives a file its event time: its modification time, or a time
// parsed from its base name.
type stamper struct {
	byName bool
	layout string
	re     *regexp.Regexp // nil: the layout parses the whole base name
	group  int
}

func newStamper(cfg *fileio.WatchConfig) (*stamper, error) {
	s := &stamper{byName: cfg.Timestamp == fileio.TimeName, layout: cfg.NameLayout}
	if cfg.NameRegexp != "" {
		re, group, err := fileio.NameGroup(cfg.NameRegexp)
		if err != nil {
			return nil, err
		}
		s.re, s.group = re, group
	}
	return s, nil
}

// time returns the event time of the file at p (slash-separated) last
// modified at mod, or why its name gives none.
func (s *stamper) time(p string, mod time.Time) (mtime.Time, error) {
	if !s.byName {
		return checkRange(mod)
	}
	part := path.Base(p)
	if s.re != nil {
		m := s.re.FindStringSubmatch(part)
		if m == nil {
			return 0, fmt.Errorf("name %q does not match name_regexp %q", part, s.re)
		}
		part = m[s.group]
	}
	var t time.Time
	switch s.layout {
	case fileio.LayoutUnix, fileio.LayoutUnixMilli:
		n, err := strconv.ParseInt(part, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("name %q: %q is not a number of %s", path.Base(p), part, s.layout)
		}
		if s.layout == fileio.LayoutUnix {
			t = time.Unix(n, 0)
		} else {
			t = time.UnixMilli(n)
		}
	default:
		var err error
		if t, err = time.Parse(s.layout, part); err != nil {
			return 0, fmt.Errorf("name %q: %w", path.Base(p), err)
		}
	}
	return checkRange(t)
}

// checkRange converts t to an event time, which must lie inside Beam's
// range of timestamps (before the end of the global window).
func checkRange(t time.Time) (mtime.Time, error) {
	ms := t.UnixMilli()
	if ms < int64(mtime.MinTimestamp) || ms >= int64(mtime.EndOfGlobalWindowTime) {
		return 0, fmt.Errorf("time %v is outside Beam's range of timestamps", t.UTC())
	}
	return mtime.Time(ms), nil
}
