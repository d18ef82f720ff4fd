// Package bench measures doctor against the manual procedure on the lab: wall time, peak
// memory and the API requests it makes, healthy, with a dead address, with 30 addresses and
// with a loaded cluster. `make bench` runs it through lab/cmd/bench and prints one table.
package bench

import (
	"fmt"
	"slices"
	"time"
)

// Series is one figure measured several times.
type Series []float64

// Median is the middle value (the mean of the two middle values for an even count).
func (s Series) Median() float64 {
	if len(s) == 0 {
		return 0
	}
	c := slices.Sorted(slices.Values(s))
	m := len(c) / 2
	if len(c)%2 == 1 {
		return c[m]
	}
	return (c[m-1] + c[m]) / 2
}

// Min is the smallest value (0 for no values).
func (s Series) Min() float64 {
	if len(s) == 0 {
		return 0
	}
	return slices.Min(s)
}

// Max is the largest value (0 for no values).
func (s Series) Max() float64 {
	if len(s) == 0 {
		return 0
	}
	return slices.Max(s)
}

// Seconds formats a series of seconds as "median [min-max]" with a unit fit for the median.
func (s Series) Seconds() string {
	if len(s) == 0 {
		return "-"
	}
	return fmt.Sprintf("%s [%s-%s]", fmtDur(s.Median()), fmtDur(s.Min()), fmtDur(s.Max()))
}

// MB formats a series of megabytes as "median [min-max] MB".
func (s Series) MB() string {
	if len(s) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f [%.1f-%.1f] MB", s.Median(), s.Min(), s.Max())
}

// Count formats a series of counts as "median [min-max]" (just the value when all agree).
func (s Series) Count() string {
	if len(s) == 0 {
		return "-"
	}
	if s.Min() == s.Max() {
		return fmt.Sprintf("%.0f", s.Median())
	}
	return fmt.Sprintf("%.0f [%.0f-%.0f]", s.Median(), s.Min(), s.Max())
}

func fmtDur(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	switch {
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", sec*1000)
	default:
		return fmt.Sprintf("%.2f s", sec)
	}
}

// Ratio is a/b of two medians, "-" when b is zero.
func Ratio(a, b Series) string {
	if b.Median() == 0 || len(a) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a.Median()/b.Median())
}
