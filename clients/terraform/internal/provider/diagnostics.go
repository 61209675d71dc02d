package provider

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/jobsched/terraform-provider-jobsched/internal/client"
)

// addConnectError explains why the provider could not use the API at all.
func addConnectError(diags *diag.Diagnostics, endpoint string, err error) {
	var unreachable *client.UnreachableError
	switch {
	case errors.As(err, &unreachable):
		diags.AddError("jobsched API unreachable",
			fmt.Sprintf("%v\nCheck endpoint (or %s) and that the API is running.", err, EnvURL))
	case client.IsStatus(err, http.StatusUnauthorized) || client.IsStatus(err, http.StatusForbidden):
		diags.AddError("jobsched API refused the token",
			fmt.Sprintf("%s answered: %v\nThe token must be a valid, unexpired JWT for this API (token, "+
				"token_command, %s or %s).", endpoint, err, EnvToken, EnvTokenCommand))
	default:
		diags.AddError("jobsched API error", err.Error())
	}
}

// addAPIError reports err from an API call. A 400's field errors (problem+json `errors`, keyed
// "schedule.cron", "http.url", ...) land on the attribute of that name when the schema has it:
// the API owns the rules, the provider only points at where they were broken.
func addAPIError(diags *diag.Diagnostics, action string, err error, attributes map[string]bool) {
	var problem *client.Problem
	if !errors.As(err, &problem) {
		addConnectError(diags, "", err)
		return
	}
	if problem.Status == http.StatusUnauthorized {
		addConnectError(diags, "", err)
		return
	}
	if len(problem.Errors) == 0 {
		diags.AddError(action+" failed", problem.Error())
		return
	}
	fields := make([]string, 0, len(problem.Errors))
	for field := range problem.Errors {
		fields = append(fields, field)
	}
	sort.Strings(fields)
	for _, field := range fields {
		message := strings.Join(problem.Errors[field], "; ")
		if attribute, ok := attributePath(field, attributes); ok {
			diags.AddAttributeError(attribute, action+" failed: "+field+": "+message,
				fmt.Sprintf("The jobsched API refused %s: %s", field, message))
		} else {
			diags.AddError(action+" failed: "+field+": "+message, problem.Error())
		}
	}
}

// attributePath maps the API's dotted field name onto the schema's path, if the schema has it.
func attributePath(field string, attributes map[string]bool) (path.Path, bool) {
	if !attributes[field] {
		// A map's key may hold dots itself ("labels.example.com/team"): the first dot ends the map's name.
		name, key, found := strings.Cut(field, ".")
		if found && attributes[name+".*"] {
			return path.Root(name).AtMapKey(key), true
		}
		return path.Empty(), false
	}
	parts := strings.Split(field, ".")
	result := path.Root(parts[0])
	for _, part := range parts[1:] {
		result = result.AtName(part)
	}
	return result, true
}
