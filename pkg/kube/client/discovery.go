package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
)

// MaxDiscoveryBytes bounds a discovery answer (/version, /apis). /apis lists one short entry
// per API group and version: a cluster with a thousand CRD groups answers a few hundred KiB.
const MaxDiscoveryBytes = 8 << 20

// discoveryClient replaces client-go's discovery client for the two questions the plugin
// asks. client-go's ServerGroups asks /api and /apis, by default for the aggregated discovery
// document (every resource of every group, decoded through its every-group scheme); the plugin
// needs only which groups and versions are served, which GET /apis as plain JSON answers. The
// legacy core group (/api, "v1") is always served and is not asked.
type discoveryClient struct{ rc rest.Interface }

// ServerVersion asks GET /version, as client-go's DiscoveryClient.ServerVersion does
// (client-go v0.37.2, discovery/discovery_client.go): JSON into version.Info.
func (d *discoveryClient) ServerVersion() (*version.Info, error) {
	var info version.Info
	if err := d.getJSON("/version", &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// ServerGroups asks GET /apis as JSON (no aggregated discovery).
func (d *discoveryClient) ServerGroups() (*metav1.APIGroupList, error) {
	var l metav1.APIGroupList
	if err := d.getJSON("/apis", &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// getJSON reads path as JSON into v, at most MaxDiscoveryBytes. Like client-go's discovery
// calls it takes no context: the rest.Config's timeout bounds it.
func (d *discoveryClient) getJSON(path string, v any) error {
	body, err := d.rc.Get().AbsPath(path).SetHeader("Accept", "application/json").Stream(context.Background())
	if err != nil {
		return err
	}
	defer func() { _ = body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(body, MaxDiscoveryBytes+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	if len(raw) > MaxDiscoveryBytes {
		return fmt.Errorf("GET %s: answer larger than %d MiB: not read further", path, MaxDiscoveryBytes>>20)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}
