package cli

import (
	"compress/gzip"
	"io"

	"github.com/lanaccess/kubectl-lanaccess/pkg/replay"
)

func gzipReader(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }

func copyBounded(w io.Writer, r io.Reader) (int64, error) {
	return io.Copy(w, io.LimitReader(r, replay.MaxBytes))
}
