package monitor

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkSubmit: rows/s recorded by a Store (write-ahead log, apply)
// from 4 writers per core sending batches of 1,000 rows (K = 10, CIFAR-10
// test predictions), by --fsync mode; the library path, without HTTP.
func BenchmarkSubmit(b *testing.B) {
	s := realSet(b)
	const batch = 1000
	for _, mode := range []Sync{SyncGroup, SyncEach} {
		b.Run("fsync="+mode.String(), func(b *testing.B) {
			st, err := Open(b.TempDir(), StoreOptions{Sync: mode, SnapshotEvery: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			var next atomic.Int64
			b.SetParallelism(4)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := int(next.Add(1)) % (s.N / batch)
					r := &Record{Kind: Observe, Model: "m", K: s.K, Probs: s.Probs[i*batch*s.K : (i+1)*batch*s.K], Labels: s.Labels[i*batch : (i+1)*batch]}
					if _, err := st.Submit(context.Background(), r); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "rows/s")
		})
	}
}

// BenchmarkWindowMemory: the heap one window of one slice holds (K = 10,
// the default metrics), from the heap in use before and after 100
// windows of 1,000 rows each.
func BenchmarkWindowMemory(b *testing.B) {
	s := realSet(b)
	for range b.N {
		m, _ := New(Options{Window: time.Second, Retain: 1000 * time.Second})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for w := range 100 {
			i := w % 10
			r := &Record{Kind: Observe, Model: "m", Time: int64(w) * int64(time.Second), K: s.K, Probs: s.Probs[i*1000*s.K : (i+1)*1000*s.K], Labels: s.Labels[i*1000 : (i+1)*1000], RequestID: strconv.Itoa(w)}
			if err := m.Check(r); err != nil {
				b.Fatal(err)
			}
			m.Apply(uint64(w+1), r)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/100, "bytes/window")
		runtime.KeepAlive(m)
	}
}
