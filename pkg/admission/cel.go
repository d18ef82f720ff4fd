package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"

	celgo "github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
)

// CEL expressions are compiled and evaluated with the API server's own admission CEL code
// (k8s.io/apiserver pkg/admission/plugin/cel), in the environment the ValidatingAdmissionPolicy
// plugin uses (pkg/admission/plugin/policy/validating/plugin.go compilePolicy: the base
// environment at the default compatibility version, variables composited, params and authorizer
// declared), so that an expression means here what it means to the API server.

var (
	baseEnvOnce sync.Once
	baseEnv     *environment.EnvSet
)

func celBaseEnv() *environment.EnvSet {
	baseEnvOnce.Do(func() { baseEnv = environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()) })
	return baseEnv
}

// expr is one boolean CEL expression (a validation, a match condition).
type expr string

func (e expr) GetExpression() string          { return string(e) }
func (e expr) ReturnTypes() []*celgo.Type     { return []*celgo.Type{celgo.BoolType} }
func (e expr) String() string                 { return string(e) }
func (v variable) GetExpression() string      { return v.expression }
func (v variable) ReturnTypes() []*celgo.Type { return []*celgo.Type{celgo.AnyType, celgo.DynType} }
func (v variable) GetName() string            { return v.name }

// variable is a named CEL expression (spec.variables).
type variable struct{ name, expression string }

// program is compiled CEL: conditions that must all be true, with composited variables.
type program struct {
	conditions plugincel.ConditionEvaluator
	exprs      []expr
}

// compile compiles exprs with variables as the ValidatingAdmissionPolicy plugin does.
func compile(variables []variable, exprs []expr, hasParams bool) (*program, error) {
	cc, err := plugincel.NewCompositedCompiler(celBaseEnv())
	if err != nil {
		return nil, err
	}
	opts := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	named := make([]plugincel.NamedExpressionAccessor, len(variables))
	for i, v := range variables {
		named[i] = v
	}
	cc.CompileAndStoreVariables(named, opts, environment.StoredExpressions)
	accessors := make([]plugincel.ExpressionAccessor, len(exprs))
	for i, e := range exprs {
		accessors[i] = e
	}
	cond := cc.CompileCondition(accessors, opts, environment.StoredExpressions)
	if errs := cond.CompilationErrors(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &program{conditions: cond, exprs: exprs}, nil
}

// outcome is one expression's result on a request.
type outcome struct {
	expr  expr
	value bool
	err   error
}

// errAuthorizer says an expression asked the authorizer about the requester, whose answer
// depends on who sends the request: the outcome then cannot be told.
var errAuthorizer = errors.New("the expression asks the authorizer about the requester")

// run evaluates the program on r.
func (p *program) run(ctx context.Context, r Request) ([]outcome, error) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "services"}
	var old runtime.Object
	if r.OldObject != nil {
		old = r.OldObject
	}
	who := &user.DefaultInfo{Name: "lanaccess:hypothetical-requester"}
	attr := admission.NewAttributesRecord(r.Object, old, gvk, r.Object.Namespace, r.Object.Name, gvr, "", admission.Operation(r.Operation), nil, false, who)
	va := &admission.VersionedAttributes{Attributes: attr, VersionedKind: gvk, VersionedObject: admission.NewLazyObject(r.Object)}
	if old != nil {
		va.VersionedOldObject = admission.NewLazyObject(old)
	}
	req := plugincel.CreateAdmissionRequest(attr, metav1.GroupVersionResource(gvr), metav1.GroupVersionKind(gvk))
	authz := &recordingAuthorizer{}
	results, _, err := p.conditions.ForInput(ctx, va, req, plugincel.OptionalVariableBindings{Authorizer: authz},
		plugincel.CreateNamespaceObject(r.NamespaceObject()), celconfig.RuntimeCELCostBudget)
	if err != nil {
		return nil, err
	}
	out := make([]outcome, len(results))
	for i, res := range results {
		out[i].expr = p.exprs[i]
		switch {
		case res.Error != nil:
			out[i].err = res.Error
		case authz.asked:
			out[i].err = errAuthorizer
		case res.EvalResult == celtypes.True:
			out[i].value = true
		case res.EvalResult == celtypes.False:
		default:
			out[i].err = fmt.Errorf("the expression gave %v, not a boolean", res.EvalResult)
		}
	}
	return out, nil
}

// recordingAuthorizer answers "no opinion" and records that it was asked.
type recordingAuthorizer struct{ asked bool }

func (a *recordingAuthorizer) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	a.asked = true
	return authorizer.DecisionNoOpinion, "", nil
}
