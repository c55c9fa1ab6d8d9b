package e2i

import (
	"errors"
	"math"
)

// The statistics the agents need, written out so the example has no dependencies: means and
// variances that skip NaN (missing weeks), Welch's two-sample comparison, Student's t
// distribution, the normal quantile, and ordinary least squares.

// finite returns the values of xs that are not NaN or infinite.
func finite(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}

// mean of the finite values of xs; NaN when there are none.
func mean(xs []float64) float64 {
	xs = finite(xs)
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// variance is the sample variance of the finite values of xs; NaN for fewer than two.
func variance(xs []float64) float64 {
	xs = finite(xs)
	if len(xs) < 2 {
		return math.NaN()
	}
	m := mean(xs)
	var s float64
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s / float64(len(xs)-1)
}

// comparison is Welch's comparison of two samples: the difference of their means (b − a), its
// standard error, t statistic and Welch–Satterthwaite degrees of freedom.
type comparison struct {
	Diff, SE, T, DF float64
	NA, NB          int
}

func welch(a, b []float64) comparison {
	a, b = finite(a), finite(b)
	c := comparison{NA: len(a), NB: len(b), Diff: mean(b) - mean(a)}
	va, vb := variance(a)/float64(len(a)), variance(b)/float64(len(b))
	c.SE = math.Sqrt(va + vb)
	c.T = c.Diff / c.SE
	c.DF = (va + vb) * (va + vb) / (va*va/float64(len(a)-1) + vb*vb/float64(len(b)-1))
	return c
}

// ci returns the two-sided confidence interval of the difference at level (e.g. 0.95).
func (c comparison) ci(level float64) (lo, hi float64) {
	h := tQuantile(1-(1-level)/2, c.DF) * c.SE
	return c.Diff - h, c.Diff + h
}

// pValue is the two-sided p-value of the t statistic.
func (c comparison) pValue() float64 { return 2 * tCDF(-math.Abs(c.T), c.DF) }

// signConfidence is the probability that the true difference has the sign of the estimate,
// under a flat prior: how sure the data make us of the direction of the change.
func (c comparison) signConfidence() float64 { return tCDF(math.Abs(c.T), c.DF) }

// normQuantile is the inverse of the standard normal CDF.
func normQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// tCDF is the CDF of Student's t distribution with df degrees of freedom (df may be
// fractional, as Welch's is).
func tCDF(t, df float64) float64 {
	if math.IsNaN(t) || math.IsNaN(df) || df <= 0 {
		return math.NaN()
	}
	if math.IsInf(df, 1) || df > 1e7 {
		return 0.5 * math.Erfc(-t/math.Sqrt2)
	}
	tail := 0.5 * betaInc(df/2, 0.5, df/(df+t*t))
	if t > 0 {
		return 1 - tail
	}
	return tail
}

// tQuantile inverts tCDF by bisection: plenty fast for a handful of calls a dispatch.
func tQuantile(p, df float64) float64 {
	if math.IsInf(df, 1) || df > 1e7 {
		return normQuantile(p)
	}
	lo, hi := -1.0, 1.0
	for tCDF(lo, df) > p {
		lo *= 2
	}
	for tCDF(hi, df) < p {
		hi *= 2
	}
	for range 100 {
		mid := (lo + hi) / 2
		if tCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// betaInc is the regularized incomplete beta function I_x(a, b), by its continued fraction
// (Numerical Recipes' betai and betacf).
func betaInc(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaFraction(a, b, x) / a
	}
	return 1 - front*betaFraction(b, a, 1-x)/b
}

func betaFraction(a, b, x float64) float64 {
	const tiny = 1e-300
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1-qab*x/qap
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		aa := fm * (b - fm) * x / ((qam + 2*fm) * (a + 2*fm))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		aa = -(a + fm) * (qab + fm) * x / ((a + 2*fm) * (qap + 2*fm))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 1e-14 {
			break
		}
	}
	return h
}

// fit is an ordinary least squares fit of y on the columns of X.
type fit struct {
	Beta   []float64 // coefficients, one per column
	SE     []float64 // their standard errors
	R2     float64
	RMSE   float64 // root mean squared residual
	Sigma  float64 // residual standard error, √(SSE / (n − k))
	N, K   int
	xtxInv [][]float64
}

var errSingular = errors.New("e2i: least squares: the design matrix is singular")

// leastSquares fits y = Xβ by the normal equations, solved by Gauss–Jordan elimination with
// partial pivoting; the inverse of XᵀX gives the coefficients' standard errors.
func leastSquares(X [][]float64, y []float64) (*fit, error) {
	n := len(y)
	if n == 0 || len(X) != n {
		return nil, errors.New("e2i: least squares: no observations")
	}
	k := len(X[0])
	if n <= k {
		return nil, errors.New("e2i: least squares: fewer observations than coefficients")
	}
	// aug is [XᵀX | I | Xᵀy].
	aug := make([][]float64, k)
	for i := range aug {
		aug[i] = make([]float64, 2*k+1)
		aug[i][k+i] = 1
	}
	for r := range n {
		for i := range k {
			for j := range k {
				aug[i][j] += X[r][i] * X[r][j]
			}
			aug[i][2*k] += X[r][i] * y[r]
		}
	}
	for col := range k {
		p := col
		for r := col + 1; r < k; r++ {
			if math.Abs(aug[r][col]) > math.Abs(aug[p][col]) {
				p = r
			}
		}
		if math.Abs(aug[p][col]) < 1e-12 {
			return nil, errSingular
		}
		aug[col], aug[p] = aug[p], aug[col]
		piv := aug[col][col]
		for j := range aug[col] {
			aug[col][j] /= piv
		}
		for r := range k {
			if r == col || aug[r][col] == 0 {
				continue
			}
			f := aug[r][col]
			for j := range aug[r] {
				aug[r][j] -= f * aug[col][j]
			}
		}
	}
	f := &fit{Beta: make([]float64, k), SE: make([]float64, k), N: n, K: k, xtxInv: make([][]float64, k)}
	for i := range k {
		f.Beta[i] = aug[i][2*k]
		f.xtxInv[i] = aug[i][k : 2*k]
	}
	my := mean(y)
	var sse, sst float64
	for r := range n {
		e := y[r] - f.predict(X[r])
		sse += e * e
		sst += (y[r] - my) * (y[r] - my)
	}
	f.R2 = 1 - sse/sst
	f.RMSE = math.Sqrt(sse / float64(n))
	f.Sigma = math.Sqrt(sse / float64(n-k))
	for i := range k {
		f.SE[i] = f.Sigma * math.Sqrt(f.xtxInv[i][i])
	}
	return f, nil
}

func (f *fit) predict(x []float64) float64 {
	var s float64
	for i, b := range f.Beta {
		s += b * x[i]
	}
	return s
}

// predictionSE is the standard error of a new observation at x: σ·√(1 + xᵀ(XᵀX)⁻¹x).
func (f *fit) predictionSE(x []float64) float64 {
	var q float64
	for i := range x {
		for j := range x {
			q += x[i] * f.xtxInv[i][j] * x[j]
		}
	}
	return f.Sigma * math.Sqrt(1+q)
}

// laplace is the rule of succession: the estimated chance of a success after k successes in
// n trials, (k+1)/(n+2). It never claims certainty from a handful of observations.
func laplace(k, n int) float64 { return float64(k+1) / float64(n+2) }

// clamp01 keeps a confidence in [0, 1]; NaN becomes 0.
func clamp01(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return min(max(x, 0), 1)
}

// round rounds x to the given number of decimals, so results read cleanly and encode stably.
func round(x float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(x*p) / p
}
