package facts

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// CNIConfig is a CNI network configuration: a .conflist's plugin chain, or a single .conf
// plugin. Only what bears on a new pod's ip_forward is kept.
type CNIConfig struct {
	Name    string
	Plugins []CNIPlugin
}

// CNIPlugin is one plugin of a chain.
type CNIPlugin struct {
	Type string
	// AllowIPForwarding is Calico's container_settings.allow_ip_forwarding (nil: absent).
	AllowIPForwarding *bool
	// Sysctl is the tuning plugin's sysctl map.
	Sysctl map[string]string
	// DelegateType is flannel's delegate plugin ("" when flannel's default, bridge, applies).
	DelegateType string
}

// cniPluginJSON is the subset of a plugin's JSON that is read.
type cniPluginJSON struct {
	Type              string `json:"type"`
	ContainerSettings *struct {
		AllowIPForwarding *bool `json:"allow_ip_forwarding"`
	} `json:"container_settings"`
	Sysctl   map[string]string `json:"sysctl"`
	Delegate *struct {
		Type string `json:"type"`
	} `json:"delegate"`
}

// ParseCNIConfig reads a .conflist ({"plugins": [...]}) or a single-plugin .conf.
func ParseCNIConfig(text string) (CNIConfig, error) {
	var raw struct {
		Name    string          `json:"name"`
		Plugins []cniPluginJSON `json:"plugins"`
		cniPluginJSON
	}
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		return CNIConfig{}, fmt.Errorf("not a CNI configuration: %w", err)
	}
	c := CNIConfig{Name: raw.Name}
	plugins := raw.Plugins
	if len(plugins) == 0 && raw.Type != "" {
		plugins = []cniPluginJSON{raw.cniPluginJSON}
	}
	if len(plugins) == 0 {
		return c, fmt.Errorf("a CNI configuration without plugins")
	}
	for _, p := range plugins {
		cp := CNIPlugin{Type: p.Type, Sysctl: p.Sysctl}
		if p.ContainerSettings != nil {
			cp.AllowIPForwarding = p.ContainerSettings.AllowIPForwarding
		}
		if p.Delegate != nil {
			cp.DelegateType = p.Delegate.Type
		}
		c.Plugins = append(c.Plugins, cp)
	}
	return c, nil
}

// templatePlaceholder is a value Calico's install-cni substitutes in the template before it
// writes the node's file (cni-plugin/pkg/install/install.go): unquoted ones, such as
// "mtu": __CNI_MTU__, are not JSON until then.
var templatePlaceholder = regexp.MustCompile(`(:\s*)(__[A-Z0-9_]+__)`)

const placeholderMark = "@@placeholder@@"

// ParseCNITemplate reads a CNI configuration template with install-time placeholders.
func ParseCNITemplate(text string) (CNIConfig, error) {
	return ParseCNIConfig(templatePlaceholder.ReplaceAllString(text, `$1"`+placeholderMark+`$2"`))
}

// CalicoTemplateAllowingForwarding returns the template with container_settings.
// allow_ip_forwarding set to true in its calico plugins, placeholders kept, or an error when
// the template cannot be read as JSON.
func CalicoTemplateAllowingForwarding(text string) (string, error) {
	marked := templatePlaceholder.ReplaceAllString(text, `$1"`+placeholderMark+`$2"`)
	var conf map[string]any
	if err := json.Unmarshal([]byte(marked), &conf); err != nil {
		return "", fmt.Errorf("the template is not JSON: %w", err)
	}
	plugins, _ := conf["plugins"].([]any)
	if len(plugins) == 0 {
		plugins = []any{conf}
	}
	found := false
	for _, p := range plugins {
		m, ok := p.(map[string]any)
		if !ok || m["type"] != "calico" {
			continue
		}
		settings, _ := m["container_settings"].(map[string]any)
		if settings == nil {
			settings = map[string]any{}
		}
		settings["allow_ip_forwarding"] = true
		m["container_settings"] = settings
		found = true
	}
	if !found {
		return "", fmt.Errorf("the template has no calico plugin")
	}
	out, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return "", err
	}
	unmarked := regexp.MustCompile(`"`+placeholderMark+`(__[A-Z0-9_]+__)"`).ReplaceAllString(string(out), "$1")
	return strings.TrimSpace(unmarked), nil
}
