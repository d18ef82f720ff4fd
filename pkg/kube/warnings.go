package kube

import (
	"slices"
	"sync"
)

// WarningCollector keeps the distinct warnings the API server sends (the Warning header).
// Set it as rest.Config.WarningHandler before building the clients, then copy Warnings()
// into Setup.APIWarnings; it is safe for concurrent use by the client's goroutines.
type WarningCollector struct {
	mu   sync.Mutex
	list []string
}

// HandleWarningHeader implements rest.WarningHandler.
func (w *WarningCollector) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if slices.Contains(w.list, text) {
		return
	}
	w.list = append(w.list, text)
}

// Warnings returns the warnings received so far, in arrival order.
func (w *WarningCollector) Warnings() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.list...)
}
