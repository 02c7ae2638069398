package executor

import "testing"

// Key groups are in the store's keys and in checkpoints: a restarted
// process must put every key in the same group, so the hash is pinned
// here. A per-process seed (maphash) once made restored windows and new
// data for the same key land in different groups.
func TestKeyGroupIsStableAcrossProcesses(t *testing.T) {
	for key, want := range map[string]int{"": 25, "k0": 42, "\x02k0": 77, "user-42": 1} {
		if got := KeyGroup([]byte(key)); got != want {
			t.Errorf("KeyGroup(%q) = %d, want %d (the key-group hash changed: checkpoints taken before no longer restore)", key, got, want)
		}
	}
}
