package main

import (
	"context"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/faults"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/kubeproxy"
)

func kubeProxyModeFault(ctx context.Context, f faults.Lab, a []string) error {
	mode, err := kubeproxy.ParseMode(a[0])
	if err != nil {
		return err
	}
	_, err = f.SetKubeProxyMode(ctx, mode)
	return err
}
