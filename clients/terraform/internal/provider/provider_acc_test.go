package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

func providerBlock(endpoint, token string) string {
	return fmt.Sprintf(`
provider "jobsched" {
  endpoint = %q
  token    = %q
}

data "jobsched_tasks" "all" {}
`, endpoint, token)
}

func closedPort(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := listener.Addr().String()
	listener.Close()
	return "http://" + address
}

// TestAccProviderDiagnostics: an API that does not answer and a token it refuses each fail with one clear error.
func TestAccProviderDiagnostics(t *testing.T) {
	requireAPI(t)
	otherKey, err := json.Marshal("not-a-jwt") // a token the API cannot verify
	if err != nil {
		t.Fatal(err)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{
				Config:      providerBlock(closedPort(t), testAPI.Token),
				ExpectError: regexp.MustCompile(`(?s)jobsched API unreachable.*cannot reach the jobsched API at http://127\.0\.0\.1:`),
			},
			{
				Config:      providerBlock(testAPI.URL, string(otherKey[1:len(otherKey)-1])),
				ExpectError: regexp.MustCompile(`(?s)jobsched API refused the token.*401`),
			},
			{ // token_command: the token from a program's output
				Config: fmt.Sprintf(`
provider "jobsched" {
  endpoint      = %q
  token_command = ["printf", "%%s", %q]
}

data "jobsched_tasks" "all" {}
`, testAPI.URL, testAPI.Token),
				Check: resource.TestCheckResourceAttrSet("data.jobsched_tasks.all", "ids.#"),
			},
		},
	})
}

// TestAccDefaultsMatchTheAPISchema: the defaults the provider plans are the ones the running API
// publishes in /v1/schema (one owner: the API; this test catches a drift).
func TestAccDefaultsMatchTheAPISchema(t *testing.T) {
	requireAPI(t)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, testAPI.URL+"/v1/schema?format=json", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/vnd.oai.openapi+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Default any `json:"default"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("/v1/schema is not JSON: %v", err)
	}
	schemas := doc.Components.Schemas
	defaultOf := func(schema, property string) string {
		s, ok := schemas[schema]
		if !ok {
			t.Fatalf("/v1/schema has no %s", schema)
		}
		return fmt.Sprint(s.Properties[property].Default)
	}
	want := map[[2]string]string{
		{"TaskInput", "timeout_seconds"}:                      fmt.Sprint(TaskDefaults.TimeoutSeconds),
		{"TaskInput", "max_attempts"}:                         fmt.Sprint(TaskDefaults.MaxAttempts),
		{"TaskInput", "backoff_base_seconds"}:                 fmt.Sprint(TaskDefaults.BackoffBaseSeconds),
		{"TaskInput", "priority"}:                             fmt.Sprint(TaskDefaults.Priority),
		{"TaskInput", "missed_runs"}:                          TaskDefaults.MissedRuns,
		{"HttpInput", "method"}:                               TaskDefaults.Method,
		{"HttpInput", "body"}:                                 TaskDefaults.Body,
		{"SigningSecretInput", "previous_expires_in_seconds"}: fmt.Sprint(DefaultPreviousExpiresInSeconds),
	}
	for key, value := range want {
		if got := defaultOf(key[0], key[1]); got != value {
			t.Errorf("%s.%s: the API's default is %q, the provider plans %q", key[0], key[1], got, value)
		}
	}
}
