package kafka

import (
	"fmt"
	"sync"
	"time"

	"github.com/weir-runner/weir/watermarkmgr"
)

// Groups holds a job's watermark alignment groups, shared by every source
// of the job that names one, so a group can span several sources. Its
// methods are safe for concurrent use by the readers.
type Groups struct {
	mu     sync.Mutex
	groups map[string]*alignGroup
}

// alignGroup is one group behind its lock.
type alignGroup struct {
	name string
	cfg  watermarkmgr.AlignConfig
	mu   sync.Mutex
	g    *watermarkmgr.Group
}

// NewGroups returns an empty set of groups.
func NewGroups() *Groups { return &Groups{groups: map[string]*alignGroup{}} }

// join returns group name, creating it with cfg. Every source of a group
// must configure it alike: a group with two maximum drifts would pause by
// whichever source announced last.
func (gs *Groups) join(name string, cfg watermarkmgr.AlignConfig) (*alignGroup, error) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if g, ok := gs.groups[name]; ok {
		if g.cfg != cfg {
			return nil, fmt.Errorf("alignment group %q is configured as %+v by one source and %+v by another", name, g.cfg, cfg)
		}
		return g, nil
	}
	g := &alignGroup{name: name, cfg: cfg, g: watermarkmgr.NewGroup(cfg)}
	gs.groups[name] = g
	return g, nil
}

// Announcements returns each group's last announcement, by name.
func (gs *Groups) Announcements() map[string]watermarkmgr.Announcement {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	out := make(map[string]watermarkmgr.Announcement, len(gs.groups))
	for name, g := range gs.groups {
		g.mu.Lock()
		out[name] = g.g.Last()
		g.mu.Unlock()
	}
	return out
}

// sync reports a reader's partitions, lets the group announce if an
// interval has passed, and returns the group's decision per partition.
func (g *alignGroup) sync(reader string, states []watermarkmgr.SplitState, now time.Time) []bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.g.Report(reader, states)
	g.g.Tick(now)
	return g.g.Paused(reader)
}

// hold reports a reader's partitions and returns the group's bound as
// the pause decision computes it now; it does not announce.
func (g *alignGroup) hold(reader string, states []watermarkmgr.SplitState) watermarkmgr.HoldBound {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.g.Report(reader, states)
	return g.g.Hold()
}

// leave removes a reader from the group.
func (g *alignGroup) leave(reader string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.g.Leave(reader)
}
