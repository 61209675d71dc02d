package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/jobsched/terraform-provider-jobsched/internal/apiharness"
	"github.com/jobsched/terraform-provider-jobsched/internal/client"
)

// testAPI is the jobsched API the acceptance tests run against (nil without TF_ACC).
var testAPI *apiharness.API

var protoV6Providers = map[string]func() (tfprotov6.ProviderServer, error){
	"jobsched": providerserver.NewProtocol6WithError(New("test")()),
}

// TestMain starts the API (its own database, gunicorn on a free port, a tenant of the run's own)
// when TF_ACC is set, and points the provider at it through JOBSCHED_URL and JOBSCHED_TOKEN.
func TestMain(m *testing.M) {
	if os.Getenv("TF_ACC") == "" {
		os.Exit(m.Run())
	}
	os.Exit(runAcceptance(m))
}

func runAcceptance(m *testing.M) int {
	terraform := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if terraform == "" {
		found, err := exec.LookPath("terraform")
		if err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: the acceptance tests need the terraform CLI (>= 1.11): none on PATH and TF_ACC_TERRAFORM_PATH is unset")
			return 1
		}
		terraform = found
	}
	// The local binary, never a download; and no call home to HashiCorp's checkpoint service.
	os.Setenv("TF_ACC_TERRAFORM_PATH", terraform)
	os.Setenv("CHECKPOINT_DISABLE", "1")
	os.Unsetenv("TF_ACC_TERRAFORM_VERSION")

	root, err := apiharness.RepoRoot(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	logDir, err := os.MkdirTemp("", "jobsched-tfacc-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	api, err := apiharness.Start(ctx, root, logDir)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: starting the jobsched API:", err)
		return 1
	}
	defer api.Stop()
	testAPI = api
	os.Setenv(EnvURL, api.URL)
	os.Setenv(EnvToken, api.Token)
	os.Unsetenv(EnvTokenCommand)
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "jobsched API log (%s):\n%s\n", filepath.Join(logDir, "jobsched-api.log"), api.Log())
	}
	return code
}

// apiClient is the test's own client of the API, for changes made "outside Terraform".
func apiClient(t *testing.T) *client.Client {
	t.Helper()
	api, err := client.New(testAPI.URL, testAPI.Token, "tfacc")
	if err != nil {
		t.Fatal(err)
	}
	return api
}

// sideEffect is a pre-apply "plan check" that changes the API between plan and apply, the
// window in which another writer can move a task past the ETag Terraform planned with.
type sideEffect func(context.Context) error

func (f sideEffect) CheckPlan(ctx context.Context, _ plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	resp.Error = f(ctx)
}

// requireAPI skips an acceptance test in a unit-test run (as resource.Test does without TF_ACC);
// `make test-terraform` sets TF_ACC=1 and runs them all.
func requireAPI(t *testing.T) {
	t.Helper()
	if testAPI == nil {
		t.Skip("acceptance test: needs TF_ACC=1 (make test-terraform starts the API)")
	}
}
