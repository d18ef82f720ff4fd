// Package textout writes tables and status text for the lab's commands, keeping the first
// write error so that a whole block is checked once, at the end.
package textout

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Printer writes until the first error and keeps it in Err.
type Printer struct{ Err error }

// Printf is fmt.Fprintf unless an earlier write failed.
func (p *Printer) Printf(w io.Writer, format string, args ...any) {
	if p.Err == nil {
		_, p.Err = fmt.Fprintf(w, format, args...)
	}
}

// Println is fmt.Fprintln unless an earlier write failed.
func (p *Printer) Println(w io.Writer, args ...any) {
	if p.Err == nil {
		_, p.Err = fmt.Fprintln(w, args...)
	}
}

// Flush flushes tw unless an earlier write failed.
func (p *Printer) Flush(tw *tabwriter.Writer) {
	if p.Err == nil {
		p.Err = tw.Flush()
	}
}
