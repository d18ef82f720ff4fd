package client

import (
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// The scheme holds the types of the API groups Interface reads, and nothing else: client-go's
// kubernetes/scheme registers every group it knows (about 50), which links their types and
// pays their registration at every start. Built as that package builds its own (client-go
// v0.37.2, kubernetes/scheme/register.go): metav1's options under the unversioned "v1", then
// each group's AddToScheme; but on first use, not in init: the registration measured 0.25 to
// 0.33 ms (GODEBUG=inittrace=1), which `version` and completion would pay for nothing. The
// codec factory and the parameter codec read the scheme when they encode or decode, not when
// they are made (client-go makes its own before its init registers anything).
var (
	scheme         = runtime.NewScheme()
	codecs         = serializer.NewCodecFactory(scheme)
	parameterCodec = runtime.NewParameterCodec(scheme)
	registerOnce   sync.Once
)

func register() {
	registerOnce.Do(func() {
		metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
		groups := runtime.SchemeBuilder{
			admissionregistrationv1.AddToScheme,
			appsv1.AddToScheme,
			authorizationv1.AddToScheme,
			corev1.AddToScheme,
			discoveryv1.AddToScheme,
			networkingv1.AddToScheme,
			policyv1.AddToScheme,
		}
		utilruntime.Must(groups.AddToScheme(scheme))
	})
}

// Scheme is the scheme of the groups Interface reads.
func Scheme() *runtime.Scheme { register(); return scheme }

// Codecs are Scheme's serializers (JSON, YAML, protobuf).
func Codecs() serializer.CodecFactory { register(); return codecs }

// ParameterCodec encodes options (ListOptions, PodExecOptions) as query parameters.
func ParameterCodec() runtime.ParameterCodec { register(); return parameterCodec }
