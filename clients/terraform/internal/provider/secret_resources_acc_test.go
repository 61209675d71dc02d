package provider

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/jobsched/terraform-provider-jobsched/internal/client"
)

func secretConfig(value string, valueVersion int) string {
	return fmt.Sprintf(`
resource "jobsched_secret" "hook" {
  name          = "report-hook"
  value         = %q
  value_version = %d
}

resource "jobsched_task" "signed" {
  name       = "uses a secret"
  schedule   = { cron = "@hourly" }
  http       = { url = "https://hooks.example.com/secret" }
  secret_ref = jobsched_secret.hook.name
}
`, value, valueVersion)
}

func secretVersionIs(want int64) resource.TestCheckFunc {
	return func(*terraform.State) error {
		secret, err := mustClient().GetSecret(context.Background(), "report-hook")
		if err != nil {
			return err
		}
		if secret.Version != want {
			return fmt.Errorf("the API's secret is at version %d, want %d", secret.Version, want)
		}
		return nil
	}
}

func mustClient() *client.Client {
	api, err := client.New(testAPI.URL, testAPI.Token, "tfacc")
	if err != nil {
		panic(err)
	}
	return api
}

// TestAccSecret: a write-only value (never in state), a task naming it, a rotation through
// value_version, a value replaced outside Terraform written back, import by name, destroy.
func TestAccSecret(t *testing.T) {
	requireAPI(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy: func(s *terraform.State) error {
			if _, err := mustClient().GetSecret(context.Background(), "report-hook"); !client.IsNotFound(err) {
				return fmt.Errorf("secret still there after destroy (err %v)", err)
			}
			return checkTasksGone(s)
		},
		Steps: []resource.TestStep{
			{
				Config: secretConfig("Bearer first-value", 1),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("jobsched_secret.hook", "version", "1"),
					resource.TestCheckNoResourceAttr("jobsched_secret.hook", "value"),
					resource.TestCheckResourceAttr("jobsched_task.signed", "secret_ref", "report-hook"),
					secretVersionIs(1),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
			{ // rotation: a new value_version PUTs the value in place (the task keeps its secret)
				Config: secretConfig("Bearer second-value", 2),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("jobsched_secret.hook", plancheck.ResourceActionUpdate),
						plancheck.ExpectResourceAction("jobsched_task.signed", plancheck.ResourceActionNoop),
					},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("jobsched_secret.hook", "version", "2"),
					secretVersionIs(2),
				),
			},
			{ // replaced through the API: the next plan writes the configured value again
				PreConfig: func() {
					if _, err := mustClient().PutSecret(context.Background(), "report-hook", "Bearer from-outside"); err != nil {
						t.Fatal(err)
					}
				},
				Config: secretConfig("Bearer second-value", 2),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("jobsched_secret.hook", plancheck.ResourceActionUpdate),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("jobsched_secret.hook", "version", "4"),
					secretVersionIs(4),
				),
			},
			{
				ResourceName:                         "jobsched_secret.hook",
				ImportState:                          true,
				ImportStateId:                        "report-hook",
				ImportStateVerify:                    true,
				ImportStateVerifyIdentifierAttribute: "name",
				// Only in configuration: the API never returns a value, nor a version of our own.
				ImportStateVerifyIgnore: []string{"value_version"},
			},
			{ // an invalid value is the API's 400 on value
				Config:      secretConfig("two\nlines", 3),
				ExpectError: regexp.MustCompile(`Replacing the secret's value failed: value: 1-8192 characters of printable`),
			},
		},
	})
}

const signingConfig = `
resource "jobsched_signing_secret" "current" {
  previous_expires_in_seconds = 3600
  rotation_triggers           = { generation = %q }
  lifecycle { create_before_destroy = true }
}
`

// TestAccSigningSecretRotation: a rotation (new trigger, create_before_destroy) makes the new secret
// first and leaves the old one signing until the overlap ends, instead of deleting it.
func TestAccSigningSecretRotation(t *testing.T) {
	requireAPI(t)
	var first string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy: func(s *terraform.State) error {
			for _, res := range s.RootModule().Resources {
				if _, err := mustClient().GetSigningSecret(context.Background(), res.Primary.ID); !client.IsNotFound(err) {
					return fmt.Errorf("signing secret %s still live after destroy (err %v)", res.Primary.ID, err)
				}
			}
			// The rotated-out one is left to expire, as documented; end it so the tenant's two slots are free.
			return mustClient().DeleteSigningSecret(context.Background(), first)
		},
		Steps: []resource.TestStep{
			{
				Config: fmt.Sprintf(signingConfig, "1"),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestMatchResourceAttr("jobsched_signing_secret.current", "secret", regexp.MustCompile(`^whsec_`)),
					resource.TestCheckNoResourceAttr("jobsched_signing_secret.current", "expires_at"),
					func(s *terraform.State) error {
						first = s.RootModule().Resources["jobsched_signing_secret.current"].Primary.ID
						return nil
					},
				),
			},
			{
				Config: fmt.Sprintf(signingConfig, "2"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("jobsched_signing_secret.current", plancheck.ResourceActionCreateBeforeDestroy),
					},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					func(s *terraform.State) error {
						second := s.RootModule().Resources["jobsched_signing_secret.current"].Primary.ID
						if second == first {
							return fmt.Errorf("not rotated: still %s", first)
						}
						old, err := mustClient().GetSigningSecret(context.Background(), first)
						if err != nil {
							return fmt.Errorf("the rotated-out secret was deleted at once: %v", err)
						}
						if old.ExpiresAt == nil {
							return fmt.Errorf("the rotated-out secret has no expiry")
						}
						return nil
					},
				),
			},
		},
	})
}
