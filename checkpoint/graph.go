package checkpoint

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// GraphNode is one node of a job's executor graph as a manifest records
// it: the stage it runs and how many subtasks it has. Store namespaces
// and subtask files are named by both, so a checkpoint restores only into
// a graph with the same nodes, in the same order, at the same parallelism.
type GraphNode struct {
	Stage string `json:"stage"`
	// Name is the stage's name (its transforms'), which tells two graphs
	// with the same shape apart.
	Name        string `json:"name,omitempty"`
	Parallelism int    `json:"parallelism"`
	// Transform is the id of the stateful transform the stage runs, if
	// any: its user state and timers are kept under that id.
	Transform string `json:"transform,omitempty"`
}

// GraphMismatchError lists every difference between a checkpoint's graph
// and the graph of the job restoring it.
type GraphMismatchError struct {
	ID         ID
	Mismatches []string
	// Savepoint says the checkpoint is a savepoint being matched by name
	// (MatchGraph), not a checkpoint of the same graph (CheckGraph).
	Savepoint bool
}

func (e *GraphMismatchError) Error() string {
	if e.Savepoint {
		return fmt.Sprintf("the savepoint (checkpoint %d) does not fit the job: %s", e.ID, strings.Join(e.Mismatches, "; "))
	}
	return fmt.Sprintf("checkpoint %d was taken of another graph: %s", e.ID, strings.Join(e.Mismatches, "; "))
}

// CheckGraph returns a *GraphMismatchError unless the manifest's graph is
// graph: the same node count, and the same stage and parallelism at every
// node. Changing the parallelism of a restored job is not supported (key
// groups would have to move between subtasks).
func CheckGraph(m *Manifest, graph []GraphNode) error {
	var diff []string
	if len(m.Graph) == 0 {
		diff = append(diff, "the checkpoint records no graph (written before restore existed)")
	} else if len(m.Graph) != len(graph) {
		diff = append(diff, fmt.Sprintf("%d nodes, the job has %d", len(m.Graph), len(graph)))
	}
	for i := range min(len(m.Graph), len(graph)) {
		was, is := m.Graph[i], graph[i]
		if was.Stage != is.Stage || was.Name != is.Name {
			diff = append(diff, fmt.Sprintf("node %d is stage %s (%s), the job's is %s (%s)", i, was.Stage, was.Name, is.Stage, is.Name))
		}
		if was.Parallelism != is.Parallelism {
			diff = append(diff, fmt.Sprintf("node %d (%s) has parallelism %d, the job's %d", i, is.Stage, was.Parallelism, is.Parallelism))
		}
	}
	if m.KeyGroups != KeyGroups {
		diff = append(diff, fmt.Sprintf("%d key groups, this runner uses %d", m.KeyGroups, KeyGroups))
	}
	if len(diff) > 0 {
		return &GraphMismatchError{ID: m.Checkpoint, Mismatches: diff}
	}
	return nil
}

// MatchOptions say how a savepoint's graph maps onto a job's.
type MatchOptions struct {
	// Rename maps transform names of the savepoint to the job's, for
	// transforms renamed since it was taken.
	Rename map[string]string
	// HasState reports whether savepoint node i holds anything to restore.
	HasState func(i int) bool
	// AllowDropped lets state that no node of the job takes be dropped,
	// instead of refusing the savepoint.
	AllowDropped bool
}

// Match says where each node of a savepoint restores.
type Match struct {
	// Into[i] is the job node that savepoint node i restores into; -1 for
	// none.
	Into []int
	// Dropped names the savepoint nodes with state that nothing restores
	// into (only with AllowDropped).
	Dropped []string
	// Fresh are the job nodes that nothing restores into: they start
	// empty, as a transform added to the pipeline does.
	Fresh []int
}

// MatchGraph matches the nodes of a savepoint's graph to the job's by
// transform name (after Rename), not by position, so a savepoint restores
// into a pipeline whose transforms were renamed, added or removed. A
// *GraphMismatchError lists everything that does not fit: a rename naming
// no transform, a matched node at another parallelism or with another
// stateful transform id, and, unless AllowDropped, savepoint state that no
// node of the job takes.
func MatchGraph(m *Manifest, graph []GraphNode, o MatchOptions) (*Match, error) {
	var diff []string
	if len(m.Graph) == 0 {
		diff = append(diff, "the savepoint records no graph")
	}
	if m.KeyGroups != KeyGroups {
		diff = append(diff, fmt.Sprintf("%d key groups, this runner uses %d", m.KeyGroups, KeyGroups))
	}
	saved, job := map[string]bool{}, map[string][]int{}
	for _, n := range m.Graph {
		saved[n.Name] = true
	}
	for j, n := range graph {
		job[n.Name] = append(job[n.Name], j)
	}
	for _, from := range slices.Sorted(maps.Keys(o.Rename)) {
		to := o.Rename[from]
		if !saved[from] {
			diff = append(diff, fmt.Sprintf("the mapping renames %q, which the savepoint has no transform of", from))
		}
		if len(job[to]) == 0 {
			diff = append(diff, fmt.Sprintf("the mapping renames %q to %q, which the job has no transform of", from, to))
		}
	}
	match := &Match{Into: make([]int, len(m.Graph))}
	taken := make([]bool, len(graph))
	for i, n := range m.Graph {
		match.Into[i] = -1
		name := n.Name
		if to, ok := o.Rename[name]; ok {
			name = to
		}
		// Names are unique in a pipeline; should two nodes share one, the
		// k-th of the savepoint takes the k-th of the job.
		for _, j := range job[name] {
			if !taken[j] {
				match.Into[i], taken[j] = j, true
				break
			}
		}
		j := match.Into[i]
		has := o.HasState != nil && o.HasState(i)
		switch {
		case j < 0 && has && o.AllowDropped:
			match.Dropped = append(match.Dropped, n.Name)
		case j < 0 && has:
			diff = append(diff, fmt.Sprintf("the state of %q (stage %s) has no transform in the job to go to: rename it, or allow dropping it", n.Name, n.Stage))
		case j < 0:
		case n.Parallelism != graph[j].Parallelism:
			diff = append(diff, fmt.Sprintf("%q has parallelism %d in the savepoint and %d in the job (changing it is not supported)", graph[j].Name, n.Parallelism, graph[j].Parallelism))
		case n.Transform != graph[j].Transform:
			diff = append(diff, fmt.Sprintf("%q keeps its state under transform id %q in the savepoint and %q in the job; user state does not move between transform ids",
				graph[j].Name, n.Transform, graph[j].Transform))
		}
	}
	for j := range graph {
		if !taken[j] {
			match.Fresh = append(match.Fresh, j)
		}
	}
	if len(diff) > 0 {
		return nil, &GraphMismatchError{ID: m.Checkpoint, Mismatches: diff, Savepoint: true}
	}
	return match, nil
}
