package recal

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/calib-dev/calib/internal/rowkey"
)

// MethodBoost is boosted logit corrections (FitBoost).
const MethodBoost Method = "boost"

// Boost is a recalibration of the probability vector by gradient-boosted
// regression trees on the log-probabilities, warm-started at the model's
// own (the identity map before the first tree). Each row's classes are
// read as its Top most probable ones (ties by class index) and, where K >
// Top, the rest as one tail class; a tree maps the features of one such
// (row, class) pair to a correction of its log-probability:
//
//	probabilities_k = exp(u_k + F(x_ik)) / sum_j exp(u_j + F(x_ij)),
//	F(x) = sum_t tree_t(x),   u_k = log p_k,
//
// with every tail class given the tail's correction (their ratios kept).
// Each leaf's correction is linear in the pair's log-probability, a + b
// max(u, floor), so that a tree holds a temperature that differs between
// regions; a fitted tree's floor is where the fit's pairs carry curvature
// (boostFloor), so that no slope reaches far below the log-probabilities
// it was fitted on. The
// features x_ik of a pair are, in order: u_k (the tail's: log of the
// tail's mass), the row's top log-probability max_j u_j, the class's rank
// in the row (0 for the top class; Top for the tail), the row's
// normalised entropy -sum_j p_j u_j / log K, the row's top class and the
// class itself (categorical: 0..K-1, K for the tail; left out above 4,096
// classes). The trees share their corrections across classes and rows
// where the data do not set them apart, and split them where they do: a
// temperature that changes across the simplex, one class's own
// distortion, a shift of the class priors.
//
// JSON: "top" (Top) and "trees", each a list of nodes in the arrays
// "feature" (-1 for a leaf), "threshold" (numeric features: x <=
// threshold goes left), "categories" (categorical features: the classes
// that go left; null otherwise), "left" and "right" (child indices, above
// the node's own), a leaf's correction a + b max(u, floor): "value" (a)
// and "slope" (b), and the tree's "floor" (absent: log 2^-126).
type Boost struct {
	Header
	Top   int         `json:"top"`
	Trees []BoostTree `json:"trees"`
}

// BoostTree is one regression tree of a Boost map (its nodes; node 0 the
// root).
type BoostTree struct {
	Feature    []int     `json:"feature"`
	Threshold  []float64 `json:"threshold"`
	Categories [][]int   `json:"categories"`
	Left       []int     `json:"left"`
	Right      []int     `json:"right"`
	Value      []float64 `json:"value"`
	Slope      []float64 `json:"slope"`
	// Floor is the lowest log-probability the leaves' slopes read (0:
	// log 2^-126).
	Floor float64 `json:"floor,omitempty"`
}

// BoostOptions configures FitBoost. The zero value is 10 classes per row,
// trees of depth 3, shrinkage 0.3, an L2 penalty of 1 on the leaves, at
// most 300 trees, stopped early on a tenth of the rows.
type BoostOptions struct {
	// Top is the number of most probable classes of each row read apart
	// (the rest share the tail's correction); 0 means 10.
	Top int
	// Depth is the trees' depth; 0 means 3.
	Depth int
	// Rate is the shrinkage of each tree's leaves; 0 means 0.3.
	Rate float64
	// Lambda is the L2 penalty of a leaf's value (in units of the
	// loss's Hessian, rows of weight 1); 0 means 1.
	Lambda float64
	// Rounds is the largest number of trees; 0 means 300.
	Rounds int
	// MinPairs is the fewest (row, class) pairs of a leaf; 0 means 20.
	MinPairs int
	// Patience stops the boosting after this many trees past the
	// first (the temperature) without a better loss on the held-out
	// rows; 0 means 5.
	Patience int
	// Subsample is the fraction of the training rows each tree past the
	// first is grown on, in (0, 1]; 0 means 1 (every row: on
	// 4,000 rows at K = 100, trees on half the rows recovered 0.61 of a
	// miscalibration whose direction changes between regions, trees on
	// all of them 0.68).
	Subsample float64
}

// The features of a (row, class) pair.
const (
	boostLogProb = iota
	boostTopLogProb
	boostRank
	boostEntropy
	boostTopClass // categorical
	boostClass    // categorical
	boostFeatures
)

// boostMaxCategories is the most classes whose identities are features.
const boostMaxCategories = 4096

// boostNumericBins is the most bins of a numeric feature in the fit.
const boostNumericBins = 32

// boostBinSample is the most rows whose features place the bins' edges.
const boostBinSample = 2048

func (o BoostOptions) withDefaults(k int) (BoostOptions, error) {
	if o.Top == 0 {
		o.Top = 10
	}
	if o.Depth == 0 {
		o.Depth = 3
	}
	if o.Rate == 0 {
		o.Rate = 0.3
	}
	if o.Lambda == 0 {
		o.Lambda = 1
	}
	if o.Rounds == 0 {
		o.Rounds = 300
	}
	if o.MinPairs == 0 {
		o.MinPairs = 20
	}
	if o.Patience == 0 {
		o.Patience = 5
	}
	if o.Subsample == 0 {
		o.Subsample = 1
	}
	switch {
	case o.Top < 1:
		return o, fmt.Errorf("%w: boost: top = %d, want at least 1", ErrInput, o.Top)
	case o.Depth < 1 || o.Depth > 12:
		return o, fmt.Errorf("%w: boost: depth = %d, want 1 to 12", ErrInput, o.Depth)
	case !(o.Rate > 0 && o.Rate <= 1):
		return o, fmt.Errorf("%w: boost: rate = %v, want a number in (0, 1]", ErrInput, o.Rate)
	case !(o.Lambda > 0) || math.IsInf(o.Lambda, 0):
		return o, fmt.Errorf("%w: boost: lambda = %v, want a finite number > 0", ErrInput, o.Lambda)
	case !(o.Subsample > 0 && o.Subsample <= 1):
		return o, fmt.Errorf("%w: boost: subsample = %v, want a number in (0, 1]", ErrInput, o.Subsample)
	case o.Rounds < 1, o.MinPairs < 1, o.Patience < 1:
		return o, fmt.Errorf("%w: boost: rounds %d, min pairs %d, patience %d: want each at least 1", ErrInput, o.Rounds, o.MinPairs, o.Patience)
	}
	o.Top = min(o.Top, k)
	return o, nil
}

// boostRows holds the pairs of a set of rows: row i's pairs are
// start[i]..start[i+1]-1 (its top classes by rank, then the tail), with
// their log-probabilities u, features x (pairs × boostFeatures) and the
// class each stands for (K for the tail).
type boostRows struct {
	k, top int
	start  []int
	u      []float64
	x      []float64
	class  []int
}

// boostPairs returns the pairs of the rows of the log-probabilities u
// (n×k).
func boostPairs(u []float64, k, top int) *boostRows {
	n := len(u) / k
	tail := 0
	if k > top {
		tail = 1
	}
	per := top + tail
	b := &boostRows{k: k, top: top, start: make([]int, n+1), u: make([]float64, n*per), x: make([]float64, n*per*boostFeatures), class: make([]int, n*per)}
	idx := make([]int, 0, top)
	logK := math.Log(float64(k))
	p := make([]float64, k)
	in := make([]bool, k)
	for i := range n {
		row := u[i*k : (i+1)*k]
		idx = topClasses(idx[:0], row, top)
		ent := 0.0
		for c, v := range row {
			p[c] = math.Exp(v)
			if p[c] > 0 {
				ent -= p[c] * v
			}
		}
		ent /= logK
		base := i * per
		b.start[i] = base
		for r, c := range idx {
			b.u[base+r], b.class[base+r] = row[c], c
		}
		if tail == 1 {
			// The tail's log-mass: the log of the other classes' sum of
			// p, by log-sum-exp over them where that sum underflows.
			for _, c := range idx {
				in[c] = true
			}
			s := 0.0
			for c := range row {
				if !in[c] {
					s += p[c]
				}
			}
			if s > 1e-280 {
				s = math.Log(s)
			} else {
				mx := math.Inf(-1)
				for c, v := range row {
					if !in[c] {
						mx = max(mx, v)
					}
				}
				t := 0.0
				for c, v := range row {
					if !in[c] {
						t += math.Exp(v - mx)
					}
				}
				s = mx + math.Log(t)
			}
			for _, c := range idx {
				in[c] = false
			}
			b.u[base+top], b.class[base+top] = s, k
		}
		for r := range per {
			x := b.x[(base+r)*boostFeatures : (base+r+1)*boostFeatures]
			x[boostLogProb] = b.u[base+r]
			x[boostTopLogProb] = row[idx[0]]
			x[boostRank] = float64(r)
			x[boostEntropy] = ent
			if k <= boostMaxCategories {
				x[boostTopClass] = float64(idx[0])
				x[boostClass] = float64(b.class[base+r])
			}
		}
	}
	b.start[n] = n * per
	return b
}

// topClasses appends to dst the indices of the top largest values of row,
// largest first (ties by the lower index), and returns it.
func topClasses(dst []int, row []float64, top int) []int {
	for c, v := range row {
		j := len(dst)
		if j == top && !(v > row[dst[j-1]]) {
			continue
		}
		if j < top {
			dst = append(dst, c)
		} else {
			j--
		}
		for j > 0 && v > row[dst[j-1]] {
			dst[j] = dst[j-1]
			j--
		}
		dst[j] = c
	}
	return dst
}

// categorical reports whether feature f is a class identity.
func boostCategorical(f int) bool { return f == boostTopClass || f == boostClass }

// FitBoost fits boosted logit corrections (Boost) on validation
// predictions (probs n×k, logits n×k or nil: read when given), labels and
// sample weights (nil: all 1) by second-order gradient boosting of the
// weighted log loss, from a first tree that is a temperature of the
// pairs' log-probabilities (a single leaf, fitted exactly: boostSlope):
// each later tree is grown level by level on the (row, class) pairs'
// gradients and Hessians (the diagonal of the softmax's), its leaves the
// Newton step of a + b v, shrunk by Rate. The rows whose key
// (rowkey.Fold of the row index) falls in one tenth of the keys are held
// out: boosting stops after Patience trees past the first without a
// lower held-out log loss, and the map keeps the trees up to the best (on
// fewer than BoostMinRows rows nothing is held out and the map is the
// temperature alone). The map is the
// same for a set whatever the number of goroutines. Errors as
// FitLogSpline's.
func FitBoost(ctx context.Context, probs, logits []float64, labels []int, k int, weights []float64, o BoostOptions) (*Boost, error) {
	readLogits := len(logits) > 0
	if err := checkFitInput(probs, logits, labels, k, readLogits, weights); err != nil {
		return nil, fmt.Errorf("recal: boost: %w", err)
	}
	if err := checkLinearData(labels, weights, LinearOptions{}); err != nil {
		return nil, fmt.Errorf("recal: boost: %w", err)
	}
	o, err := o.withDefaults(k)
	if err != nil {
		return nil, err
	}
	if !readLogits {
		logits = nil
	}
	u := logProbs(probs, logits, k)
	n := len(labels)
	pr := boostPairs(u, k, o.Top)
	per := pr.start[1] - pr.start[0]
	// Each row's label as a pair: its rank among the top, or the tail.
	label := make([]int, n)
	for i, y := range labels {
		label[i] = per - 1
		for r := range per {
			if pr.class[pr.start[i]+r] == y {
				label[i] = r
				break
			}
		}
	}
	held := make([]bool, n)
	rounds := o.Rounds
	if n >= BoostMinRows {
		for i := range held {
			held[i] = rowkey.Fold(uint64(i), boostSalt, boostHeldFolds) == 0
		}
	} else {
		rounds = 1 // a temperature alone: too few rows to grow trees on
	}
	var train []int
	for i := range n {
		if !held[i] {
			train = append(train, i)
		}
	}
	bins := boostBinning(pr, train, per)
	code := bins.encode(pr)
	f := make([]float64, len(pr.u)) // the pairs' corrections F
	g, h := make([]float64, len(pr.u)), make([]float64, len(pr.u))
	p := make([]float64, per)
	w := func(i int) float64 {
		if weights == nil {
			return 1
		}
		return weights[i]
	}
	var trees []boostTree
	bestLoss, best := math.Inf(1), 0
	var pairs, heldPairs []int
	for i := range n {
		for j := pr.start[i]; j < pr.start[i]+per; j++ {
			if held[i] {
				heldPairs = append(heldPairs, j)
			} else {
				pairs = append(pairs, j)
			}
		}
	}
	floor := boostFloor(pr, pairs, w)
	v := make([]float64, len(pr.u)) // the leaves' linear term, max(u, floor)
	for j, uj := range pr.u {
		v[j] = max(uj, floor)
	}
	tb := newTreeBuilder(bins, o, code, v, g, h)
	sample := make([]int, 0, len(pairs))
	// The first tree (t = 0) is a single linear leaf: temperature scaling
	// of the pairs' log-probabilities, fitted exactly (boostSlope); the
	// patience counts the deeper trees after the best.
	for t := 0; t < rounds; t++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("recal: boost: %w", err)
		}
		loss := 0.0
		for i := range n {
			s := pr.start[i]
			softmaxShifted(p, pr.u[s:s+per], f[s:s+per])
			if held[i] {
				loss -= w(i) * math.Log(max(p[label[i]], 1e-300))
				continue
			}
			for r := range per {
				y := 0.0
				if r == label[i] {
					y = 1
				}
				g[s+r] = w(i) * (p[r] - y)
				h[s+r] = w(i) * max(p[r]*(1-p[r]), 1e-12)
			}
		}
		if n >= BoostMinRows {
			if loss < bestLoss*(1-1e-12) {
				bestLoss, best = loss, t
			} else if t-best >= o.Patience {
				break
			}
		} else {
			best = t
		}
		if t == 0 {
			// The temperature reads every log-probability (to log 2^-126).
			vt := make([]float64, len(pr.u))
			for j, uj := range pr.u {
				vt[j] = max(uj, boostLinearFloor)
			}
			b := boostSlope(pr, vt, train, label, w)
			trees = append(trees, boostTree{feature: []int{-1}, bin: []int{0}, left: [][]bool{nil}, lo: []int{-1}, hi: []int{-1},
				value: []float64{0}, slope: []float64{b}, categorical: []bool{false}, floor: boostLinearFloor})
			for j := range f {
				f[j] += b * vt[j]
			}
			continue
		}
		// Each deeper tree sees a fraction Subsample of the training rows
		// (stochastic gradient boosting), drawn by a hash of the row and
		// the tree.
		sample = sample[:0]
		if o.Subsample >= 1 {
			sample = append(sample, pairs...)
		} else {
			for _, i := range train {
				if float64(rowkey.Fold(uint64(i)^uint64(t)<<40, boostSampleSalt, 1<<20)) < o.Subsample*(1<<20) {
					for j := pr.start[i]; j < pr.start[i]+per; j++ {
						sample = append(sample, j)
					}
				}
			}
		}
		tb.use(sample)
		tr := tb.grow(o.Depth, o.Rate)
		if tr == nil {
			break // no split and no gain: the corrections have converged
		}
		tr.floor = floor
		trees = append(trees, *tr)
		if len(tb.pairs) == len(pairs) {
			// Grown on every training pair: those know their leaves.
			tb.addLeaves(f, tr)
			for _, j := range heldPairs {
				f[j] += tr.predictCode(code[j*boostFeatures:(j+1)*boostFeatures], v[j])
			}
		} else {
			for j := range f {
				f[j] += tr.predictCode(code[j*boostFeatures:(j+1)*boostFeatures], v[j])
			}
		}
	}
	if n >= BoostMinRows {
		// The held-out loss after the last tree.
		loss := 0.0
		for i := range n {
			if held[i] {
				s := pr.start[i]
				softmaxShifted(p, pr.u[s:s+per], f[s:s+per])
				loss -= w(i) * math.Log(max(p[label[i]], 1e-300))
			}
		}
		if loss < bestLoss*(1-1e-12) {
			best = len(trees)
		}
	} else {
		best = len(trees)
	}
	out := &Boost{Header: Header{SchemaVersion: SchemaVersion, Method: string(MethodBoost), Input: InputLogits, K: k}, Top: o.Top, Trees: []BoostTree{}}
	for _, tr := range trees[:best] {
		out.Trees = append(out.Trees, tr.export(bins))
	}
	return out, nil
}

// boostMaxLeaf bounds a loaded map's leaves, so that no correction
// overflows.
const boostMaxLeaf = 1e6

// BoostMinRows is the fewest rows a boost fit grows trees on (a tenth held
// out to stop it); on fewer the map is its first tree, a temperature: a
// held-out set of under 40 rows stops the
// boosting on noise (fitted on 100 rows, K = 4, with a fifth held out, the
// trees it kept raised the log loss of 40 new rows to 1.85, where a
// temperature gives 1.53).
const BoostMinRows = 400

// boostSlope returns the slope b of the single leaf b max(u, floor) that
// minimises the weighted log loss of the rows' pairs, softmax(u + b v)
// (a temperature 1 / (1 + b) of the log-probabilities, the tail's mass
// one pair): Newton's method on the convex loss with its exact second
// derivative sum_i w_i Var_p(v), halving a step that raises the loss,
// within the temperatures [MinTemperature, MaxTemperature]. The
// diagonal Hessian a tree's leaf reads overshoots here (the loss of
// CIFAR-10 logits went up and down for six such steps).
func boostSlope(pr *boostRows, v []float64, rows, label []int, w func(int) float64) float64 {
	per := pr.start[1] - pr.start[0]
	p := make([]float64, per)
	eval := func(b float64) (loss, d1, d2 float64) {
		for _, i := range rows {
			s := pr.start[i]
			u, vi := pr.u[s:s+per], v[s:s+per]
			mx := math.Inf(-1)
			for r, ur := range u {
				p[r] = ur + b*vi[r]
				mx = max(mx, p[r])
			}
			z := 0.0
			for r := range p {
				p[r] = math.Exp(p[r] - mx)
				z += p[r]
			}
			ev, evv := 0.0, 0.0
			for r, vr := range vi {
				q := p[r] / z
				ev += q * vr
				evv += q * vr * vr
			}
			y := label[i]
			vy := vi[y]
			wi := w(i)
			loss -= wi * (u[y] + b*vy - mx - math.Log(z))
			d1 += wi * (ev - vy)
			d2 += wi * max(evv-ev*ev, 0)
		}
		return loss, d1, d2
	}
	lo, hi := 1/MaxTemperature-1, 1/MinTemperature-1
	b := 0.0
	loss, d1, d2 := eval(b)
	for range 50 {
		if !(d2 > 0) {
			break
		}
		step := -d1 / d2
		next := min(max(b+step, lo), hi)
		nl, n1, n2 := eval(next)
		for tries := 0; nl > loss && tries < 30; tries++ {
			next = (b + next) / 2
			nl, n1, n2 = eval(next)
		}
		if !(nl <= loss) {
			break
		}
		moved := math.Abs(next - b)
		b, loss, d1, d2 = next, nl, n1, n2
		if moved <= 1e-10*(1+math.Abs(b)) {
			break
		}
	}
	return b
}

// boostSampleSalt sets the trees' samples apart.
const boostSampleSalt = 0x626f6f737473616d // "boostsam"

// boostSalt sets the held-out rows apart from other uses of the row keys.
const boostSalt = 0x626f6f7374686c64 // "boosthld"

// softmaxShifted writes softmax(u + f) to p.
func softmaxShifted(p, u, f []float64) {
	mx := math.Inf(-1)
	for r := range u {
		p[r] = u[r] + f[r]
		mx = max(mx, p[r])
	}
	s := 0.0
	for r := range p {
		p[r] = math.Exp(p[r] - mx)
		s += p[r]
	}
	for r := range p {
		p[r] /= s
	}
}

// boostBins are the bins of the features in a fit: each numeric
// feature's edges (a value's bin is the number of edges below it), and
// each feature's number of bins.
type boostBins struct {
	edges [boostFeatures][]float64
	count [boostFeatures]int
}

// boostBinning places the numeric features' edges at distinct quantiles
// of the training rows' pairs (at most boostNumericBins bins); the rank's
// edges are 0..per-2, the categorical features' bins the classes.
func boostBinning(pr *boostRows, train []int, per int) *boostBins {
	b := &boostBins{}
	// The quantiles of at most boostBinSample rows (every stride-th).
	stride := max(1, len(train)/boostBinSample)
	vals := make([]float64, 0, (len(train)/stride+1)*per)
	for _, f := range []int{boostLogProb, boostTopLogProb, boostEntropy} {
		vals = vals[:0]
		for ti := 0; ti < len(train); ti += stride {
			i := train[ti]
			for j := pr.start[i]; j < pr.start[i]+per; j++ {
				vals = append(vals, pr.x[j*boostFeatures+f])
			}
		}
		slices.Sort(vals)
		var e []float64
		for q := 1; q < boostNumericBins && len(vals) > 0; q++ {
			v := vals[q*len(vals)/boostNumericBins]
			// An edge below v: the midpoint to the value before it, so
			// that v opens the bin.
			lo := sort.SearchFloat64s(vals, v)
			if lo == 0 {
				continue
			}
			edge := vals[lo-1] + (v-vals[lo-1])/2
			if len(e) == 0 || edge > e[len(e)-1] {
				e = append(e, edge)
			}
		}
		b.edges[f] = e
		b.count[f] = len(e) + 1
	}
	for r := 0; r+1 < per; r++ {
		b.edges[boostRank] = append(b.edges[boostRank], float64(r))
	}
	b.count[boostRank] = per
	cats := 1
	if pr.k <= boostMaxCategories {
		cats = pr.k + 1
	}
	b.count[boostTopClass], b.count[boostClass] = cats, cats
	return b
}

// encode returns each pair's bin of each feature (pairs × boostFeatures).
func (b *boostBins) encode(pr *boostRows) []uint16 {
	code := make([]uint16, len(pr.x))
	for j := range len(pr.u) {
		x := pr.x[j*boostFeatures : (j+1)*boostFeatures]
		c := code[j*boostFeatures : (j+1)*boostFeatures]
		for f := range boostFeatures {
			if boostCategorical(f) {
				c[f] = uint16(x[f])
				continue
			}
			c[f] = uint16(sort.SearchFloat64s(b.edges[f], x[f]))
		}
	}
	return code
}

// boostTree is a tree in the fit: splits on bins.
type boostTree struct {
	feature     []int
	bin         []int    // numeric: bin <= bin goes left
	left        [][]bool // categorical: left[node][category]
	lo, hi      []int
	value       []float64
	slope       []float64
	categorical []bool
	floor       float64 // the lowest log-probability the slopes read
}

// boostFloor returns the lowest log-probability the leaves' slopes read:
// the log-probability below which lie the training pairs of a share
// boostFloorShare of the Hessian mass p (1 - p) of the model's own
// probabilities (weighted by the rows' weights), and at least log
// 2^-126. A slope fitted where the pairs carry curvature would otherwise
// reach far below it: at K = 100, where most classes of a row are near
// probability 0, a first deep tree's leaf applied to log-probabilities of
// -30 and less raised the held-out log loss from 419 to 673.
func boostFloor(pr *boostRows, pairs []int, w func(int) float64) float64 {
	// The Hessian mass by unit of log-probability (bucket c holds u in
	// (-c-1, -c]), then the pairs of the buckets up to the one where the
	// share is reached, sorted: the exact quantile without sorting all.
	const buckets = 88 // -boostLinearFloor < 88
	var mass [buckets + 1]float64
	h := make([]float64, len(pairs))
	bucket := func(u float64) int {
		if !(u > -buckets) {
			return buckets // also a log-probability of -1e30 (a masked logit), or -Inf
		}
		return int(-u)
	}
	total, row := 0.0, 0
	for pi, j := range pairs {
		for pr.start[row+1] <= j {
			row++
		}
		p := math.Exp(pr.u[j])
		h[pi] = w(row) * p * (1 - p)
		mass[bucket(pr.u[j])] += h[pi]
		total += h[pi]
	}
	if !(total > 0) {
		return boostLinearFloor
	}
	want, cum, edge := boostFloorShare*total, 0.0, 0
	for c := buckets; c >= 0; c-- {
		if cum+mass[c] >= want {
			edge = c
			break
		}
		cum += mass[c]
	}
	type uh struct{ u, h float64 }
	var low []uh
	for pi, j := range pairs {
		if u := pr.u[j]; bucket(u) >= edge && h[pi] > 0 {
			low = append(low, uh{u, h[pi]})
		}
	}
	slices.SortFunc(low, func(a, b uh) int { return cmpFloat(a.u, b.u) })
	cum = 0
	for _, x := range low {
		cum += x.h
		if cum >= want {
			return max(x.u, boostLinearFloor)
		}
	}
	return boostLinearFloor
}

// boostFloorShare is the share of the Hessian mass below the floor (on
// 4,000 rows at K = 100 where the miscalibration's direction changes
// between regions, 3 data sets: none 0.72 of the truth recovered, 1e-3
// 0.79, 1e-2 0.80 but K = 10 label smoothing 0.78 in one of 3 where 1e-3
// kept 0.85, 3e-2 and 0.1 less).
const boostFloorShare = 1e-3

// floor returns the tree's Floor (log 2^-126 where 0).
func (t *BoostTree) floor() float64 {
	if t.Floor == 0 {
		return boostLinearFloor
	}
	return t.Floor
}

// boostLinearFloor is the lowest log-probability a leaf's slope reads in
// a map without a Floor.
const boostLinearFloor = -87.33654475055310898657 // log 2^-126

// predictCode returns the tree's value for a pair's bins and linear term
// v = max(u, t.floor).
func (t *boostTree) predictCode(c []uint16, v float64) float64 {
	n := 0
	for t.feature[n] >= 0 {
		f := t.feature[n]
		var goLeft bool
		if t.categorical[n] {
			goLeft = t.left[n][c[f]]
		} else {
			goLeft = int(c[f]) <= t.bin[n]
		}
		if goLeft {
			n = t.lo[n]
		} else {
			n = t.hi[n]
		}
	}
	return t.value[n] + t.slope[n]*v
}

// export returns the tree in feature units.
func (t *boostTree) export(b *boostBins) BoostTree {
	m := len(t.feature)
	out := BoostTree{Feature: slices.Clone(t.feature), Threshold: make([]float64, m), Categories: make([][]int, m),
		Left: slices.Clone(t.lo), Right: slices.Clone(t.hi), Value: slices.Clone(t.value), Slope: slices.Clone(t.slope)}
	if t.floor != boostLinearFloor {
		out.Floor = t.floor
	}
	for n := range m {
		f := t.feature[n]
		switch {
		case f < 0:
			out.Left[n], out.Right[n] = -1, -1
		case t.categorical[n]:
			for c, l := range t.left[n] {
				if l {
					out.Categories[n] = append(out.Categories[n], c)
				}
			}
		default:
			out.Threshold[n] = b.edges[f][t.bin[n]]
		}
	}
	return out
}

// treeBuilder grows the trees of a fit, reusing its buffers.
type treeBuilder struct {
	bins   *boostBins
	o      BoostOptions
	code   []uint16
	v      []float64 // the pairs' max(u, floor), the leaves' linear term
	g, h   []float64
	pairs  []int   // the training pairs
	node   []int   // each training pair's node in the tree being grown
	center float64 // the h-weighted mean of the training pairs' v
	off    [boostFeatures]int
	total  int
}

// use sets the pairs the next tree is grown on.
func (tb *treeBuilder) use(pairs []int) {
	tb.pairs = pairs
	if cap(tb.node) < len(pairs) {
		tb.node = make([]int, len(pairs))
	}
	tb.node = tb.node[:len(pairs)]
}

func newTreeBuilder(b *boostBins, o BoostOptions, code []uint16, v, g, h []float64) *treeBuilder {
	tb := &treeBuilder{bins: b, o: o, code: code, v: v, g: g, h: h}
	for f := range boostFeatures {
		tb.off[f] = tb.total
		tb.total += b.count[f]
	}
	return tb
}

// split is a node's best split.
type split struct {
	gain    float64
	feature int
	bin     int    // numeric
	left    []bool // categorical
}

// grow fits one tree (maxDepth >= 1) to the gradients of the training
// pairs, level by level, splits chosen by the gain of linear leaves, then
// each leaf's correction a + b v (v = max(u, floor), tb.v) by one Newton
// step; nil when the root has no split. On return every training pair's
// node (tb.node) is its leaf.
func (tb *treeBuilder) grow(maxDepth int, rate float64) *boostTree {
	o := tb.o
	t := &boostTree{}
	newNode := func() int {
		t.feature = append(t.feature, -1)
		t.bin = append(t.bin, 0)
		t.left = append(t.left, nil)
		t.lo, t.hi = append(t.lo, -1), append(t.hi, -1)
		t.value, t.slope = append(t.value, 0), append(t.slope, 0)
		t.categorical = append(t.categorical, false)
		return len(t.feature) - 1
	}
	newNode()
	clear(tb.node)
	var th, thv float64
	for _, j := range tb.pairs {
		th += tb.h[j]
		thv += tb.h[j] * tb.v[j]
	}
	tb.center = thv / th
	level := []int{0}
	// Each node's histograms; a split node's larger child's are its
	// parent's less the smaller child's, so that one pass over the
	// smaller children's pairs builds a level.
	hists := map[int][]binSums{}
	count := []int{len(tb.pairs)}
	parent := []int{-1}
	var leaf []binSums // each leaf's sums (binSums about the centre)
	for depth := 0; depth < maxDepth && len(level) > 0; depth++ {
		pos := make([]int, len(t.feature))
		for i := range pos {
			pos[i] = -1
		}
		var built []int
		for _, nd := range level {
			if nd == 0 {
				built = append(built, nd)
				continue
			}
			p := parent[nd]
			sib := t.lo[p] + t.hi[p] - nd
			if count[nd] < count[sib] || (count[nd] == count[sib] && nd < sib) {
				built = append(built, nd)
			}
		}
		for li, nd := range built {
			pos[nd] = li
		}
		hist := make([]binSums, len(built)*tb.total)
		for pi, j := range tb.pairs {
			li := pos[tb.node[pi]]
			if li < 0 {
				continue
			}
			base := li * tb.total
			c := tb.code[j*boostFeatures : (j+1)*boostFeatures]
			gj, hj := tb.g[j], tb.h[j]
			v := tb.v[j] - tb.center
			gv, hv := gj*v, hj*v
			hvv := hv * v
			for f := range boostFeatures {
				b := &hist[base+tb.off[f]+int(c[f])]
				b.g += gj
				b.h += hj
				b.gv += gv
				b.hv += hv
				b.hvv += hvv
				b.n++
			}
		}
		for li, nd := range built {
			hists[nd] = hist[li*tb.total : (li+1)*tb.total]
		}
		for _, nd := range level {
			if pos[nd] >= 0 {
				continue
			}
			p := parent[nd]
			sib := hists[t.lo[p]+t.hi[p]-nd]
			ph := hists[p]
			h := make([]binSums, tb.total)
			for b := range h {
				h[b] = ph[b].minus(sib[b])
			}
			hists[nd] = h
		}
		var next []int
		for _, nd := range level {
			if sp := tb.best(hists[nd]); sp.feature >= 0 {
				t.feature[nd] = sp.feature
				t.categorical[nd] = boostCategorical(sp.feature)
				t.bin[nd], t.left[nd] = sp.bin, sp.left
				lo := newNode()
				hi := newNode()
				t.lo[nd], t.hi[nd] = lo, hi
				next = append(next, lo, hi)
				count = append(count, 0, 0)
				parent = append(parent, nd, nd)
			}
		}
		if depth == 0 && t.feature[0] < 0 {
			return nil
		}
		// Move the pairs of split nodes to their children; at the last
		// level, add each pair to its leaf's sums.
		last := depth == maxDepth-1 || len(next) == 0
		if last {
			leaf = make([]binSums, len(t.feature))
		}
		for pi, j := range tb.pairs {
			nd := tb.node[pi]
			f := t.feature[nd]
			if f < 0 {
				if last {
					tb.addPair(&leaf[nd], j)
				}
				continue
			}
			c := tb.code[j*boostFeatures+f]
			var goLeft bool
			if t.categorical[nd] {
				goLeft = t.left[nd][c]
			} else {
				goLeft = int(c) <= t.bin[nd]
			}
			if goLeft {
				tb.node[pi] = t.lo[nd]
			} else {
				tb.node[pi] = t.hi[nd]
			}
			count[tb.node[pi]]++
			if last {
				tb.addPair(&leaf[tb.node[pi]], j)
			}
		}
		if last {
			break
		}
		level = next
	}
	// The leaves: minimise sum g (a + b v) + h (a + b v)^2 / 2 + Lambda (a^2
	// + b^2) / 2 over the leaf's pairs (v = max(u, floor) less the leaf's
	// mean v, so that a and b are nearly independent), then shrink by Rate.
	// The sums about the tree's centre (the last level's pass) move to the
	// leaf's mean m: HV' = 0, HVV' = HVV - HV^2 / H, GV' = GV - G m.
	for nd := range t.feature {
		if t.feature[nd] >= 0 {
			continue
		}
		ls := leaf[nd]
		m := 0.0
		if ls.h > 0 {
			m = ls.hv / ls.h
		}
		a11, a22 := ls.h+o.Lambda, max(ls.hvv-ls.hv*m, 0)+o.Lambda
		sgv := ls.gv - ls.g*m
		a := -ls.g / a11
		b := -sgv / a22
		t.slope[nd] = rate * b
		t.value[nd] = rate * (a - b*(m+tb.center))
	}
	return t
}

// addPair adds pair j's g, h and their products with v = max(u, floor)
// less the tree's centre to a.
func (tb *treeBuilder) addPair(a *binSums, j int) {
	gj, hj := tb.g[j], tb.h[j]
	v := tb.v[j] - tb.center
	a.g += gj
	a.h += hj
	a.gv += gj * v
	a.hv += hj * v
	a.hvv += hj * v * v
	a.n++
}

// addLeaves adds to f, for each pair the tree was grown on, its leaf's
// correction (the leaf each pair was moved to: what predictCode finds).
func (tb *treeBuilder) addLeaves(f []float64, t *boostTree) {
	for pi, j := range tb.pairs {
		nd := tb.node[pi]
		f[j] += t.value[nd] + t.slope[nd]*tb.v[j]
	}
}

// binSums are the sums over a histogram bin's pairs of g, h, g v, h v
// and h v^2 (v the pair's log-probability, floored, less the tree's
// centre) and their number.
type binSums struct {
	g, h, gv, hv, hvv float64
	n                 int32
}

func (a *binSums) add(b *binSums) {
	a.g, a.h, a.gv, a.hv, a.hvv, a.n = a.g+b.g, a.h+b.h, a.gv+b.gv, a.hv+b.hv, a.hvv+b.hvv, a.n+b.n
}

func (a binSums) minus(b binSums) binSums {
	return binSums{a.g - b.g, a.h - b.h, a.gv - b.gv, a.hv - b.hv, a.hvv - b.hvv, a.n - b.n}
}

// gain is twice the loss a linear leaf a + b v removes at its Newton
// step: [G, GV] A^-1 [G, GV]' for A = [[H + l, HV], [HV, HVV + l]].
func (a binSums) gain(l float64) float64 {
	a11, a12, a22 := a.h+l, a.hv, a.hvv+l
	det := a11*a22 - a12*a12
	if !(det > 0) {
		return 0
	}
	return (a22*a.g*a.g - 2*a12*a.g*a.gv + a11*a.gv*a.gv) / det
}

// slope is the linear leaf's b at its Newton step.
func (a binSums) slope(l float64) float64 {
	a11, a12, a22 := a.h+l, a.hv, a.hvv+l
	det := a11*a22 - a12*a12
	if !(det > 0) {
		return 0
	}
	return -(a11*a.gv - a12*a.g) / det
}

// best returns the best split of a node from its histograms (binSums per
// bin of each feature; feature -1 for none): the largest gain of linear
// leaves, gain(L) + gain(R) - gain(node), with at least MinPairs pairs on
// each side; numeric features split at a bin, categorical ones at a cut
// of the classes ordered by their constant leaf's value G / (H + Lambda)
// or by their slope (whichever gains more).
func (tb *treeBuilder) best(hist []binSums) split {
	o := tb.o
	var all binSums
	for b := range tb.bins.count[0] {
		all.add(&hist[b])
	}
	sp := split{feature: -1}
	if int(all.n) < 2*o.MinPairs {
		return sp
	}
	parent := all.gain(o.Lambda)
	order := make([]int, 0, 64)
	for f := range boostFeatures {
		nb := tb.bins.count[f]
		if nb < 2 {
			continue
		}
		fh := hist[tb.off[f] : tb.off[f]+nb]
		cat := boostCategorical(f)
		orders := 1
		if cat {
			orders = 2
		}
		for ord := range orders {
			order = order[:0]
			for b := range nb {
				// A class of fewer than MinPairs pairs is never sent
				// left alone: its order would be noise.
				if fh[b].n > 0 && (!cat || int(fh[b].n) >= o.MinPairs) {
					order = append(order, b)
				}
			}
			if cat {
				key := func(b int) float64 { return fh[b].g / (fh[b].h + boostCatSmooth*o.Lambda) }
				if ord == 1 {
					key = func(b int) float64 { return fh[b].slope(boostCatSmooth * o.Lambda) }
				}
				slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(key(a), key(b)) })
			}
			// A cut of C ordered classes is chosen among about 2^(C-1)
			// partitions: its gain on noise grows with C (about C - 1 for
			// a chi-squared of C - 1 degrees of freedom), which it must
			// beat.
			var left binSums
			for oi := 0; oi+1 < len(order); oi++ {
				b := order[oi]
				left.add(&fh[b])
				if int(left.n) < o.MinPairs || int(all.n-left.n) < o.MinPairs {
					continue
				}
				penalty := 0.0
				if cat {
					penalty = catPenalty(len(order), oi+1)
				}
				gain := left.gain(o.Lambda) + all.minus(left).gain(o.Lambda) - parent - penalty
				if gain > sp.gain*(1+1e-12)+1e-12 {
					sp = split{gain: gain, feature: f, bin: b}
					if cat {
						sp.left = make([]bool, nb)
						for _, c := range order[:oi+1] {
							sp.left[c] = true
						}
					}
				}
			}
		}
	}
	return sp
}

// catPenalty is the gain a cut of c ordered classes, l of them sent
// left, must pay: the least of 2 log binom(c, min(l, c - l)) (the
// description length of the side named) and (c - 2) / 2 (about the
// excess over a numeric split of what the best cut of c sorted classes
// gains on noise). On 4,000 rows at K = 100 the full c - 2 found no split
// in 1 of 7 data sets whose miscalibration changes direction between two
// halves of the classes (median 0.74 of it recovered; half: 0.78, none
// missed), a quarter missed one class's distortion.
func catPenalty(c, l int) float64 {
	s := min(l, c-l)
	lg, _ := math.Lgamma(float64(c + 1))
	la, _ := math.Lgamma(float64(s + 1))
	lb, _ := math.Lgamma(float64(c - s + 1))
	return min(2*(lg-la-lb), float64(max(0, c-2))/2)
}

// boostCatSmooth is the ridge, in units of Lambda, of the classes'
// values that order a categorical split.
const boostCatSmooth = 10

// cmpFloat orders a before b when a < b.
func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Calibrate returns the corrected probabilities: u = log-softmax of the
// logits (log max(p, 2^-126) given probabilities), then each row's pairs'
// corrections, the tail's for every tail class. A row whose classes all
// get the same correction (the softmax unchanged) comes back as given:
// its probabilities where they are given.
func (m *Boost) Calibrate(probs, logits []float64, k int) ([]float64, error) {
	if _, err := m.checkInput(probs, logits, k); err != nil {
		return nil, err
	}
	u := logProbs(probs, logits, k)
	pr := boostPairs(u, k, min(m.Top, k))
	n := len(u) / k
	per := 0
	if n > 0 {
		per = pr.start[1] - pr.start[0]
	}
	out := make([]float64, len(u))
	delta := make([]float64, per)
	for i := range n {
		s := pr.start[i]
		mx := math.Inf(-1)
		for r := range per {
			delta[r] = m.correction(pr.x[(s+r)*boostFeatures : (s+r+1)*boostFeatures])
			mx = max(mx, pr.u[s+r]+delta[r])
		}
		sum := 0.0
		for r := range per {
			sum += math.Exp(pr.u[s+r] + delta[r] - mx)
		}
		if len(probs) > 0 && allEqual(delta) {
			// The same correction for every class leaves the row as it
			// is: its probabilities themselves, not their round trip
			// through the logarithm (whose last bits the Lp gain's sign
			// of g - f would read).
			copy(out[i*k:(i+1)*k], probs[i*k:(i+1)*k])
			continue
		}
		lse := mx + math.Log(sum)
		tail := 0.0
		if top := min(m.Top, k); per > top {
			tail = delta[top]
		}
		row := u[i*k : (i+1)*k]
		o := out[i*k : (i+1)*k]
		for c := range row {
			o[c] = math.Exp(row[c] + tail - lse)
		}
		for r := range min(m.Top, k) {
			c := pr.class[s+r]
			o[c] = math.Exp(row[c] + delta[r] - lse)
		}
	}
	return out, nil
}

// allEqual reports whether every value of x is the first.
func allEqual(x []float64) bool {
	for _, v := range x {
		if v != x[0] {
			return false
		}
	}
	return true
}

// correction returns F(x), the sum of the trees' values for the features
// x of a pair.
func (m *Boost) correction(x []float64) float64 {
	s := 0.0
	for ti := range m.Trees {
		t := &m.Trees[ti]
		n := 0
		for t.Feature[n] >= 0 {
			f := t.Feature[n]
			var goLeft bool
			if boostCategorical(f) {
				goLeft = slices.Contains(t.Categories[n], int(x[f]))
			} else {
				goLeft = x[f] <= t.Threshold[n]
			}
			if goLeft {
				n = t.Left[n]
			} else {
				n = t.Right[n]
			}
		}
		s += t.Value[n] + t.Slope[n]*max(x[boostLogProb], t.floor())
	}
	return s
}

// valid checks a loaded map: top >= 1, each tree's nodes well formed
// (features in range, children above their node and in range, every node
// reached once, finite thresholds, values and slopes within -+1e6,
// categories in 0..K of categorical features).
func (m *Boost) valid() error {
	if m.Top < 1 {
		return badValue("top = %d, want at least 1", m.Top)
	}
	if m.Trees == nil {
		return fmt.Errorf("no trees list")
	}
	for ti, t := range m.Trees {
		name := fmt.Sprintf("trees[%d]", ti)
		nn := len(t.Feature)
		if nn == 0 {
			return fmt.Errorf("%s: no nodes", name)
		}
		for _, l := range []int{len(t.Threshold), len(t.Categories), len(t.Left), len(t.Right), len(t.Value), len(t.Slope)} {
			if l != nn {
				return fmt.Errorf("%s: %d features but arrays of %d", name, nn, l)
			}
		}
		if err := firstError(checkFinite(name+".threshold", t.Threshold), checkFinite(name+".value", t.Value), checkFinite(name+".slope", t.Slope)); err != nil {
			return err
		}
		if !(t.Floor == 0 || (t.Floor >= boostLinearFloor && t.Floor < 0)) {
			return badValue("%s: floor %v: want a log-probability in [log 2^-126, 0), or none", name, t.Floor)
		}
		for n := range nn {
			if math.Abs(t.Value[n]) > boostMaxLeaf || math.Abs(t.Slope[n]) > boostMaxLeaf {
				return badValue("%s: node %d's value %v, slope %v: want each within -+%g (a fitted map's are far smaller)", name, n, t.Value[n], t.Slope[n], boostMaxLeaf)
			}
		}
		seen := make([]bool, nn)
		seen[0] = true
		for n := range nn {
			if !seen[n] {
				return badValue("%s: node %d is no node's child", name, n)
			}
			f := t.Feature[n]
			if f < 0 {
				if f != -1 {
					return badValue("%s.feature[%d] = %d, want -1 (a leaf) or 0 to %d", name, n, f, boostFeatures-1)
				}
				continue
			}
			if f >= boostFeatures {
				return badValue("%s.feature[%d] = %d, want -1 (a leaf) or 0 to %d", name, n, f, boostFeatures-1)
			}
			for _, c := range []int{t.Left[n], t.Right[n]} {
				if c <= n || c >= nn || seen[c] {
					return badValue("%s: node %d's child %d: want a node after it, not reached before, below %d", name, n, c, nn)
				}
				seen[c] = true
			}
			for _, c := range t.Categories[n] {
				if !boostCategorical(f) || c < 0 || c > m.K {
					return badValue("%s.categories[%d]: %d, want a class 0 to %d of a categorical feature", name, n, c, m.K)
				}
			}
		}
	}
	return nil
}

// boostHeldFolds: one row in boostHeldFolds is held out to stop a fit
// (on 4,000 rows at K = 100, a tenth recovered 0.74 of a split
// miscalibration and 0.90 of one class's distortion, a fifth 0.70 and
// 0.84).
const boostHeldFolds = 10
