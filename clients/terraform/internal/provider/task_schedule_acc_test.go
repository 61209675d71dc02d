package provider

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

const intervalAddress = "jobsched_task.interval"

func intervalConfig(every string, window int, overlap string, startsAt, endsAt time.Time) string {
	return fmt.Sprintf(`
resource "jobsched_task" "interval" {
  name = "every few hours"
  schedule = {
    every          = %q
    anchor         = "2027-01-01T00:15:00+01:00"
    window_seconds = %d
    starts_at      = %q
    ends_at        = %q
    max_runs       = 40
  }
  http                    = { url = "https://hooks.example.com/interval" }
  overlap                 = %q
  delete_after_completion = true
}
`, every, window, startsAt.Format(time.RFC3339), endsAt.Format(time.RFC3339), overlap)
}

// TestAccTaskIntervalScheduleWithBoundsWindowAndOverlap: an interval task with its bounds, window and
// overlap policy is created, read back without a diff (the configuration's spellings kept), changed in
// place, and a window longer than the interval is refused on its attribute with nothing written.
func TestAccTaskIntervalScheduleWithBoundsWindowAndOverlap(t *testing.T) {
	requireAPI(t)
	var id string
	starts := time.Now().Add(48 * time.Hour).Truncate(time.Second)
	ends := starts.Add(30 * 24 * time.Hour)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             checkTasksGone,
		Steps: []resource.TestStep{
			{
				Config: intervalConfig("90m", 600, "skip", starts, ends),
				Check: resource.ComposeAggregateTestCheckFunc(
					func(s *terraform.State) error { id = s.RootModule().Resources[intervalAddress].Primary.ID; return nil },
					resource.TestCheckResourceAttr(intervalAddress, "schedule.every", "90m"),
					resource.TestCheckResourceAttr(intervalAddress, "schedule.anchor", "2027-01-01T00:15:00+01:00"),
					resource.TestCheckResourceAttr(intervalAddress, "schedule.window_seconds", "600"),
					resource.TestCheckResourceAttr(intervalAddress, "schedule.max_runs", "40"),
					resource.TestCheckResourceAttr(intervalAddress, "schedule.exclude_calendars.#", "0"),
					resource.TestCheckNoResourceAttr(intervalAddress, "schedule.cron"),
					resource.TestCheckResourceAttr(intervalAddress, "overlap", "skip"),
					resource.TestCheckResourceAttr(intervalAddress, "delete_after_completion", "true"),
					resource.TestCheckResourceAttr(intervalAddress, "status", "active"),
					resource.TestCheckResourceAttrSet(intervalAddress, "next_run_at"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
			{ // the interval and the policy change in place, same id
				Config: intervalConfig("2h", 0, "replace", starts, ends),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(intervalAddress, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					func(s *terraform.State) error {
						if got := s.RootModule().Resources[intervalAddress].Primary.ID; got != id {
							return fmt.Errorf("task replaced: %s, was %s", got, id)
						}
						return nil
					},
					resource.TestCheckResourceAttr(intervalAddress, "schedule.every", "2h"),
					resource.TestCheckResourceAttr(intervalAddress, "schedule.window_seconds", "0"),
					resource.TestCheckResourceAttr(intervalAddress, "overlap", "replace"),
					resource.TestCheckResourceAttr(intervalAddress, "version", "2"),
				),
			},
			{ // a window longer than the interval: the API's 400 on schedule.window_seconds, nothing written
				Config:      intervalConfig("2h", 3*3600, "replace", starts, ends),
				ExpectError: regexp.MustCompile(`(?s)Updating the task failed: schedule\.window_seconds`),
			},
			{ // unchanged by the refused apply
				Config:   intervalConfig("2h", 0, "replace", starts, ends),
				PlanOnly: true,
			},
		},
	})
}
