package executor

import "github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

// SideWindows describes how a side input is windowed, so that an SDK stage
// can tell when the side window a main-input window maps to is complete.
//
// Beam maps a main-input window to the side-input window that contains the
// main window's last instant; for sliding side windows several do, and SDKs
// differ on which one they pick. The stage waits for the one that ends
// last, which is right whichever the SDK reads.
type SideWindows struct {
	// Size is the length of a fixed or sliding window; zero means the global
	// window, or a window function the runner does not interpret: such a
	// side input is complete only when its input ends.
	Size mtime.Time
	// Period is the start-to-start distance of sliding windows; zero for
	// fixed windows.
	Period mtime.Time
	// Offset shifts window starts from the epoch.
	Offset mtime.Time
}

// ReadyAfter returns the last instant of the latest side window that holds
// main, the main window's last instant: once the side input's watermark is
// past it, the side input for main's window is complete.
func (w SideWindows) ReadyAfter(main mtime.Time) mtime.Time {
	if w.Size <= 0 || main >= mtime.EndOfGlobalWindowTime {
		return mtime.EndOfGlobalWindowTime
	}
	period := w.Period
	if period <= 0 {
		period = w.Size
	}
	rem := (main - w.Offset) % period
	if rem < 0 {
		rem += period
	}
	end := main - rem + w.Size
	if end-1 > mtime.EndOfGlobalWindowTime {
		return mtime.EndOfGlobalWindowTime
	}
	return end - 1
}
