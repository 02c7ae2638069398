package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/weir-runner/weir/runner"
)

// weir serve's confinement flags: PROCESS environments refused unless
// allowed, lists by comma or repetition, the state dir allowed with the
// allowed dirs, limits off by default and never negative.
func TestConfineFlags(t *testing.T) {
	defaultState := filepath.Join(os.TempDir(), "weir")
	for _, tc := range []struct {
		name     string
		args     []string
		stateDir string
		want     runner.Confinement
		usageErr bool
	}{
		{name: "defaults", want: runner.Confinement{RestrictProcess: true}},
		{name: "allow process", args: []string{"--allow-process-environments"}, want: runner.Confinement{}},
		{name: "commands", args: []string{"--allow-process-command=/a/boot,/b/boot", "--allow-process-command", "/c/boot"},
			want: runner.Confinement{RestrictProcess: true, AllowedProcessCommands: []string{"/a/boot", "/b/boot", "/c/boot"}}},
		{name: "relative command", args: []string{"--allow-process-command=boot"}, usageErr: true},
		{name: "dirs and state dir", args: []string{"--allowed-dirs=/data,/out"}, stateDir: "/var/weir",
			want: runner.Confinement{RestrictProcess: true, AllowedDirs: []string{"/data", "/out", "/var/weir"}}},
		{name: "dirs and default state dir", args: []string{"--allowed-dirs=/data"},
			want: runner.Confinement{RestrictProcess: true, AllowedDirs: []string{"/data", defaultState}}},
		{name: "limits", args: []string{"--max-staged-bytes-per-job=10", "--max-staged-bytes=20", "--max-concurrent-jobs=3", "--max-request-bytes=4096"},
			want: runner.Confinement{RestrictProcess: true, MaxStagedBytesPerJob: 10, MaxStagedBytes: 20, MaxConcurrentJobs: 3, MaxRequestBytes: 4096}},
		{name: "negative limit", args: []string{"--max-concurrent-jobs=-1"}, usageErr: true},
		{name: "request past gRPC", args: []string{"--max-request-bytes=3000000000"}, usageErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFlagSet("serve", "")
			var cf confineFlags
			cf.register(fs)
			if err := parseFlags(fs, tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := cf.confinement(tc.stateDir)
			if tc.usageErr {
				if !errors.Is(err, errUsage) {
					t.Fatalf("confinement: %v, want a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.RestrictProcess != tc.want.RestrictProcess || !slices.Equal(got.AllowedProcessCommands, tc.want.AllowedProcessCommands) ||
				!slices.Equal(got.AllowedDirs, tc.want.AllowedDirs) || got.MaxStagedBytesPerJob != tc.want.MaxStagedBytesPerJob ||
				got.MaxStagedBytes != tc.want.MaxStagedBytes || got.MaxConcurrentJobs != tc.want.MaxConcurrentJobs || got.MaxRequestBytes != tc.want.MaxRequestBytes {
				t.Errorf("confinement %+v, want %+v", got, tc.want)
			}
		})
	}
}
