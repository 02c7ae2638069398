package uitest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// DefaultChromium is where Debian's chromium package, which
// internal/tools/chromium.sh installs, puts the browser.
const DefaultChromium = "/usr/bin/chromium"

// ChromiumPath returns the Chromium to run: $WEIR_CHROMIUM if set (it must
// be executable), else DefaultChromium, else chromium or chromium-browser on
// $PATH.
func ChromiumPath() (string, error) {
	if p := os.Getenv("WEIR_CHROMIUM"); p != "" {
		if err := executable(p); err != nil {
			return "", fmt.Errorf("uitest: WEIR_CHROMIUM=%s: %w", p, err)
		}
		return p, nil
	}
	if executable(DefaultChromium) == nil {
		return DefaultChromium, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("uitest: no Chromium: $WEIR_CHROMIUM is unset and " + DefaultChromium + " is missing")
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

// Chromium returns the Chromium to run, or skips the test if there is none.
// With WEIR_REQUIRE_CHROMIUM=1 a missing Chromium fails the test instead, so
// a run that means to test the UI cannot pass by skipping it.
func Chromium(t testing.TB) string {
	t.Helper()
	p, err := ChromiumPath()
	if err == nil {
		return p
	}
	const how = "install it with internal/tools/chromium.sh (make chromium), or point WEIR_CHROMIUM at one"
	if os.Getenv("WEIR_REQUIRE_CHROMIUM") == "1" {
		t.Fatalf("%v; WEIR_REQUIRE_CHROMIUM=1 asks for the browser tests to run: %s", err, how)
		return ""
	}
	t.Skipf("%v; %s (WEIR_REQUIRE_CHROMIUM=1 turns this skip into a failure)", err, how)
	return ""
}
