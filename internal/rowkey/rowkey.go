// Package rowkey gives each row of a prediction set a 64-bit key from its
// values and its place in the stream, never from a file's name or format:
// the key of the streamed evaluation's sample of evaluation points and of
// the variational estimator's folds, so that a set read in memory, in
// batches, in shards or by a distributed pipeline deals every row alike.
package rowkey

import "math"

// Mix is the SplitMix64 finaliser.
func Mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Key returns the key of a row: its label y, weight w and probabilities
// p, the position shard of its shard in the stream's list of shards (0
// for one file), its index row in that shard, and the seed:
//
//	key = Mix(Mix(Mix(c XOR seed) + Mix(shard + 1)) + row),  c = Mix(... Mix(Mix(y) XOR b_w) ... XOR b_pK)
//
// with b the bits of w and of each p_k as float64. Rows of equal values
// get keys of their own (the place enters every key).
func Key(seed uint64, y int, w float64, p []float64, shard int, row int64) uint64 {
	c := Mix(uint64(y))
	c = Mix(c ^ math.Float64bits(w))
	for _, v := range p {
		c = Mix(c ^ math.Float64bits(v))
	}
	return Mix(Mix(Mix(c^seed)+Mix(uint64(shard)+1)) + uint64(row))
}

// Fold returns the fold in 0..folds-1 of a row of key k under a salt that
// sets the folds apart from other uses of the key: the high 32 bits of
// Mix(k XOR salt) scaled to the folds (every fold equally likely).
func Fold(k, salt uint64, folds int) int {
	return int((Mix(k^salt) >> 32) * uint64(folds) >> 32)
}
