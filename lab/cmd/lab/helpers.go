package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/nfqdelay"
)

// newDelayCommand holds packets of an NFQUEUE for a fixed time (the latency fault).
func newDelayCommand() *cobra.Command {
	var queue uint16
	var delay time.Duration
	cmd := &cobra.Command{
		Use:    "delay",
		Short:  "Delay every packet of an NFQUEUE",
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := nfqdelay.Open(queue, delay)
			if err != nil {
				return err
			}
			defer func() { _ = d.Close() }()
			return d.Run(cmd.Context())
		},
	}
	cmd.Flags().Uint16Var(&queue, "queue", 1, "NFQUEUE number")
	cmd.Flags().DurationVar(&delay, "delay", 100*time.Millisecond, "added latency")
	return cmd
}

// newListenCommand binds a port and holds it (the "something else listens on the node port"
// fault). TCP connections are accepted and closed; UDP datagrams are read and dropped.
func newListenCommand() *cobra.Command {
	var addr, proto string
	cmd := &cobra.Command{
		Use:    "listen",
		Short:  "Bind a TCP or UDP port and hold it",
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stop := make(chan os.Signal, 1)
			signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
			switch proto {
			case "tcp":
				ln, err := net.Listen("tcp4", addr)
				if err != nil {
					return err
				}
				defer func() { _ = ln.Close() }()
				go func() {
					for {
						c, err := ln.Accept()
						if err != nil {
							return
						}
						_ = c.Close()
					}
				}()
			case "udp":
				pc, err := net.ListenPacket("udp4", addr)
				if err != nil {
					return err
				}
				defer func() { _ = pc.Close() }()
				go func() {
					buf := make([]byte, 2048)
					for {
						if _, _, err := pc.ReadFrom(buf); err != nil {
							return
						}
					}
				}()
			default:
				return fmt.Errorf("protocol %q: want tcp or udp", proto)
			}
			select {
			case <-stop:
			case <-cmd.Context().Done():
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "", "address:port to bind")
	cmd.Flags().StringVar(&proto, "proto", "tcp", "tcp or udp")
	return cmd
}
