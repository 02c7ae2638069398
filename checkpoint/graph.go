package checkpoint

import (
	"fmt"
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
}

// GraphMismatchError lists every difference between a checkpoint's graph
// and the graph of the job restoring it.
type GraphMismatchError struct {
	ID         ID
	Mismatches []string
}

func (e *GraphMismatchError) Error() string {
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
