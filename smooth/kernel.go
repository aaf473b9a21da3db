package smooth

import (
	"math"

	"github.com/calib-dev/calib/internal/numpy"
	"gonum.org/v1/gonum/dsp/fourier"
)

// tapCut is the exponent beyond which a Gaussian tap is skipped:
// exp(-tapCut) of the peak (see the package doc, Numerics).
const tapCut = 64

// densityFloor is relplot's eps of BaseKernelMixin.smooth, added to the
// unnormalised density.
const densityFloor = 1e-4

// roundHalfEven is Python 3's round of a float to an int.
func roundHalfEven(x float64) int { return int(math.RoundToEven(x)) }

// gridSize is the grid of relplot's GaussianKernel.apply at sigma:
// max(2000, round(20/sigma)) // 2 + 1.
func gridSize(sigma float64) int { return max(2000, roundHalfEven(20/sigma))/2 + 1 }

// meshSize is the number of evaluation points of relplot's smooth_ece:
// max(round(10/sigma), 200).
func meshSize(sigma float64) int { return max(roundHalfEven(10/sigma), 200) }

// splat adds the values v_i (v nil: 1; w not nil: times w_i) at the
// points f_i to dst (len G) by linear splatting, as relplot's
// smooth_round_to_grid does with np.add.at: bin int(f(G-1)) clipped to
// [0, G-2] gets (1-frac) v_i, the next frac v_i, all lower shares added
// first in input order, then all upper shares.
func splat(dst, f, v, w []float64) {
	g := len(dst)
	last := float64(g - 1)
	val := func(i int) float64 {
		x := 1.0
		if v != nil {
			x = v[i]
		}
		if w != nil {
			x = w[i] * x
		}
		return x
	}
	bin := func(x float64) (int, float64) {
		b := min(max(int(x*last), 0), g-2)
		return b, x*last - float64(b)
	}
	for i, x := range f {
		b, frac := bin(x)
		dst[b] += (1 - frac) * val(i)
	}
	for i, x := range f {
		b, frac := bin(x)
		dst[b+1] += frac * val(i)
	}
}

// directTaps is the number of kept taps up to which convolve sums
// directly; above, it multiplies spectra (gonum's FFT), O(g log g).
const directTaps = 96

// kernel is relplot's ReflectedGaussianKernel(sigma).convolve on a grid of
// g points, as a correlation with the reversed taps.
type kernel struct {
	g    int
	ker  []float64 // the taps, 0 outside [lo', hi') of the kept ones
	rev  []float64 // rev[k] = ker[g-1-lo-k]: the kept taps reversed
	lo   int       // the first rev index: g - hi'
	half int       // g // 2
	fft  *fourier.FFT
	spec []complex128 // the spectrum of ker padded to fft.Len()
}

// newKernel samples the Gaussian density of sigma on g points as
// relplot's kernel_ev does (np.exp(-(t-0.5)*(t-0.5)/(2 var)) / (sqrt(2 pi)
// sigma)) and keeps the taps within exp(-tapCut) of the peak. exact
// asks for the direct sums whatever the number of taps: where the density
// is near 0 (no score near t), the FFT's rounding (about 1e-16 of the
// largest output) is no small share of the smoothed values, as it is of
// the smooth ECE's sums; the curve's ratios there need the direct sums.
func newKernel(sigma float64, g int, exact bool) *kernel {
	t := numpy.Linspace(0, 1, g)
	v := sigma * sigma
	norm := math.Sqrt(2*math.Pi) * sigma
	lo, hi := g, 0
	ker := make([]float64, g)
	for j, tj := range t {
		d := tj - 0.5
		x := -d * d / (2 * v)
		if x < -tapCut {
			continue
		}
		ker[j] = math.Exp(x) / norm
		lo, hi = min(lo, j), max(hi, j+1)
	}
	// The tap nearest 0.5 is within half a cell of it, x >= -1/(8 (g-1)^2
	// v) > -tapCut for every sigma >= 1/1024 asked here: lo < hi.
	k := &kernel{g: g, half: g / 2, ker: ker, lo: g - hi}
	k.rev = make([]float64, hi-lo)
	for i := range k.rev {
		k.rev[i] = ker[g-1-(k.lo+i)]
	}
	if len(k.rev) > directTaps && !exact {
		// Linear convolution of the 3g-2 reflected points with the g taps
		// has 4g-3 terms; a circular one of n >= 3g-2 wraps only terms
		// q >= n onto q - n <= g - 2, below the g-1+half the output reads.
		n := fastSize(3*g - 2)
		k.fft = fourier.NewFFT(n)
		pad := make([]float64, n)
		copy(pad, ker)
		k.spec = k.fft.Coefficients(nil, pad)
	}
	return k
}

// fastSize returns the least 2^a 3^b 5^c >= n: a length gonum's FFT
// factors into its fast radices.
func fastSize(n int) int {
	best := math.MaxInt
	for p2 := 1; p2 < 2*n; p2 *= 2 {
		for p3 := p2; p3 < 2*n; p3 *= 3 {
			for p5 := p3; p5 < 2*n; p5 *= 5 {
				if p5 >= n {
					best = min(best, p5)
				}
			}
		}
	}
	return best
}

// extend returns relplot's reflected grid: values[1:] reversed, values,
// values[:g-1] reversed (3g - 2 points).
func extend(values []float64) []float64 {
	g := len(values)
	ext := make([]float64, 3*g-2)
	for e := range ext {
		p := e - (g - 1)
		switch {
		case p < 0:
			ext[e] = values[-p]
		case p <= g-1:
			ext[e] = values[p]
		default:
			ext[e] = values[2*(g-1)-p]
		}
	}
	return ext
}

// convolve returns relplot's
//
//	np.convolve(ext, ker, "valid")[g//2 : g//2 + g]
//
// out[i] = sum_k ext[i + g//2 + k] ker[g-1-k], over the kept taps, for
// each of the channels (which share the kernel): directly for a few
// taps, else by FFT (full[q] = sum_j ext[q-j] ker[j], out[i] =
// full[i + g//2 + g - 1]), whose rounding error is about 1e-16 of the
// largest output times log g.
func (k *kernel) convolve(channels ...[]float64) [][]float64 {
	out := make([][]float64, len(channels))
	var coef []complex128
	var seq []float64
	for c, values := range channels {
		ext := extend(values)
		o := make([]float64, k.g)
		if k.fft != nil {
			pad := make([]float64, k.fft.Len())
			copy(pad, ext)
			coef = k.fft.Coefficients(coef, pad)
			for i, s := range k.spec {
				coef[i] *= s
			}
			seq = k.fft.Sequence(seq, coef)
			scale := 1 / float64(len(pad))
			for i := range o {
				o[i] = seq[i+k.half+k.g-1] * scale
			}
			out[c] = o
			continue
		}
		for i := range o {
			base := ext[i+k.half+k.lo:]
			base = base[:len(k.rev)]
			s := 0.0
			for m, r := range k.rev {
				s += base[m] * r
			}
			o[i] = s
		}
		out[c] = o
	}
	return out
}

// interpolate is relplot's interpolate(t, y): the piecewise linear
// function through (i/(len(y)-1), y_i) at t.
func interpolate(t, y []float64) []float64 {
	n := len(y)
	size := 1 / float64(n-1)
	out := make([]float64, len(t))
	for k, x := range t {
		i := min(max(int(x*float64(n-1)), 0), n-2)
		r := (x - float64(i)*size) / size
		out[k] = y[i]*(1-r) + y[i+1]*r
	}
	return out
}
