package alarm_test

import (
	"fmt"

	"github.com/calib-dev/calib/alarm"
)

// An alarm on a model that says 0.9 and is right half the time: the test
// reaches its threshold log(1/0.01) = 4.6 within a few dozen rows.
func ExampleAlarm() {
	a, _ := alarm.New(2, alarm.Options{})
	p := []float64{0.9, 0.1}
	for i := 0; ; i++ {
		a.Update(p, i%2, a.Bet(p))
		if e := a.Evidence(); e.TestAlarm() {
			fmt.Printf("test alarm after %d rows (log-evidence %.1f >= %.1f)\n", e.Rows, e.Test, e.TestThreshold)
			break
		}
	}
	// Output:
	// test alarm after 24 rows (log-evidence 4.9 >= 4.6)
}
