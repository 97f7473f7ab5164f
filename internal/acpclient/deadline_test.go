package acpclient

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestPausableDeadline: the run's timeout counts only the time it was not paused (a permission
// being decided), however the pauses nest, and fires once. The timer logic alone, on synctest's
// clock, so the times are exact and the test waits for none of them; TestTimeoutPausedForPermission
// checks that a live agent's permission request pauses it.
func TestPausableDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fired atomic.Int32 // the timer fires on a goroutine of its own
		d := newPausableDeadline(5*time.Second, func() { fired.Add(1) })
		defer d.stop()

		time.Sleep(2 * time.Second)
		d.pause()
		d.pause() // two permissions at once: both must end before the clock runs again
		time.Sleep(time.Hour)
		d.resume()
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := fired.Load(); n != 0 {
			t.Fatalf("fired %d times while a pause was still on", n)
		}
		d.resume()
		time.Sleep(3*time.Second - time.Nanosecond)
		synctest.Wait()
		if fired.Load() != 0 {
			t.Fatal("fired before the 5 s not paused had passed")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if n := fired.Load(); n != 1 {
			t.Fatalf("fired %d times once 5 s not paused had passed", n)
		}

		// A pause after the deadline fired, and its resume, start nothing again.
		d.pause()
		d.resume()
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := fired.Load(); n != 1 {
			t.Fatalf("fired %d times after a pause that came too late", n)
		}
	})
}

// TestPausableDeadlineStop: a run that ended stops its deadline, which then never fires.
func TestPausableDeadlineStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fired atomic.Bool
		d := newPausableDeadline(time.Second, func() { fired.Store(true) })
		time.Sleep(time.Second / 2)
		d.stop()
		time.Sleep(time.Hour)
		synctest.Wait()
		if fired.Load() {
			t.Fatal("a stopped deadline fired")
		}
	})
}
