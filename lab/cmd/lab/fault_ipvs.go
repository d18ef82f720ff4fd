package main

import (
	"context"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/faults"
)

func ipvsFault(ctx context.Context, f faults.Lab, a []string) error {
	on, err := onOff(a[0], "on", "off")
	if err != nil {
		return err
	}
	return f.SetIPVSMode(ctx, on)
}
