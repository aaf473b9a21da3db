package evaluate

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
)

// TestCloneIsDeepAndExact: for every streamed metric alone and all of
// them together, with and without weights, at K = 3 and K = 10, a clone's
// JSON form equals the original's byte for byte, and adding rows to the
// clone leaves the original's JSON form as it was (nothing is shared).
func TestCloneIsDeepAndExact(t *testing.T) {
	sets := realSets(t)
	csv, err := data.Load("testdata/c02_n200_k3.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var cases []MetricSet
	for _, m := range StreamableMetrics() {
		cases = append(cases, MetricSet{m})
	}
	cases = append(cases, StreamableMetrics())
	for _, set := range []*data.Set{csv, sets[0]} {
		for _, weighted := range []bool{false, true} {
			s := *set
			if weighted {
				s.Weights = make([]float64, s.N)
				for i := range s.Weights {
					s.Weights[i] = 0.5 + float64(i%3)
				}
			}
			half := s.N / 2
			first, second := s.Rows(0, half), s.Rows(half, s.N)
			for _, ms := range cases {
				o := StreamOptions{Options: Options{Metrics: ms, Mode: NotionSet{Notions: []kde.Notion{kde.TopLabel, kde.ClassWise}}}}
				sums, err := NewSums(o)
				if err != nil {
					t.Fatal(err)
				}
				if err := sums.Add(&data.Batch{Set: first, Source: "a"}); err != nil {
					t.Fatalf("%v: %v", ms, err)
				}
				before, _ := json.Marshal(sums)
				c := sums.Clone()
				got, _ := json.Marshal(c)
				if !bytes.Equal(before, got) {
					t.Errorf("K = %d, weighted %v, %v: the clone's JSON differs (%d and %d bytes)", s.K, weighted, ms, len(before), len(got))
					continue
				}
				if err := c.Add(&data.Batch{Set: second, Source: "a", Offset: int64(half)}); err != nil {
					t.Fatalf("%v: %v", ms, err)
				}
				after, _ := json.Marshal(sums)
				if !bytes.Equal(before, after) {
					t.Errorf("K = %d, weighted %v, %v: adding to the clone changed the original", s.K, weighted, ms)
				}
			}
		}
	}
}
