package faults

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/daemon"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/fwdauth"
)

// The lab's forward-auth server reads its answers from this ConfigMap (manifests/base
// 45-forward-auth.yaml).
const (
	AnswersNamespace = "auth"
	AnswersConfigMap = "forward-auth-answers"
	answersKey       = "answers.json"
)

// SetForwardAuthAnswer makes the lab's forward-auth server answer the requests Traefik makes for
// host with a (nil: its identity provider's redirect again), and waits until the pod runtime
// has written the pod's answers file. The real Traefik in front of it decides what the browser
// gets: e.g. a path that Traefik resolves against a forwardAuth address on a cluster name. It
// returns the previous answer (nil when there was none).
func (f Lab) SetForwardAuthAnswer(ctx context.Context, host string, a *fwdauth.Answer) (*fwdauth.Answer, error) {
	cms := f.Client.CoreV1().ConfigMaps(AnswersNamespace)
	cm, err := cms.Get(ctx, AnswersConfigMap, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("configmap %s/%s: %w", AnswersNamespace, AnswersConfigMap, err)
	}
	answers := fwdauth.Answers{}
	if raw := cm.Data[answersKey]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &answers); err != nil {
			return nil, fmt.Errorf("configmap %s/%s: %w", AnswersNamespace, AnswersConfigMap, err)
		}
	}
	var prev *fwdauth.Answer
	if old, ok := answers[host]; ok {
		prev = &old
	}
	if a == nil {
		delete(answers, host)
	} else {
		answers[host] = *a
	}
	b, err := json.Marshal(answers)
	if err != nil {
		return prev, err
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[answersKey] = string(b)
	cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	if err != nil {
		return prev, fmt.Errorf("update configmap %s/%s: %w", AnswersNamespace, AnswersConfigMap, err)
	}
	return prev, f.WaitSynced(ctx, daemon.SyncRuntime, "configmaps", cm.ResourceVersion)
}

// SetForwardAuthLocation is SetForwardAuthAnswer with a 302 to loc ("" for the identity
// provider's answer); it returns the previous Location ("" for none).
func (f Lab) SetForwardAuthLocation(ctx context.Context, host, loc string) (string, error) {
	var a *fwdauth.Answer
	if loc != "" {
		a = &fwdauth.Answer{Status: 302, Location: loc}
	}
	prev, err := f.SetForwardAuthAnswer(ctx, host, a)
	if prev == nil {
		return "", err
	}
	return prev.Location, err
}
