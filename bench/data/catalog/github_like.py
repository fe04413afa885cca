"""Tool definitions of a large, GitHub-like MCP server, for the catalog benchmark and tests.

Large hosted servers (code hosting, cloud APIs) list dozens of tools, each
with a paragraph of description and a schema with shared parameters; that
is where deferral pays. These definitions are written to look like such a
server (owner/repo parameters, pagination, enums, nested objects), not
copied from one. `python bench/data/catalog/github_like.py` rewrites
github_like_tools.json beside it; catalog_server.py serves that file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

OWNER = {"type": "string", "description": "Repository owner: a user or organization login."}
REPO = {"type": "string", "description": "Repository name, without the owner."}
PAGE = {"type": "integer", "minimum": 1, "description": "Page number of the results to fetch (1-based)."}
PER_PAGE = {"type": "integer", "minimum": 1, "maximum": 100, "description": "Results per page, at most 100."}
SORT_DIR = {"type": "string", "enum": ["asc", "desc"], "description": "Sort direction."}


def tool(
    name: str,
    description: str,
    props: dict[str, Any],
    required: list[str],
    *,
    repo: bool = True,
    paged: bool = False,
    read_only: bool = True,
) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    req: list[str] = []
    if repo:
        properties.update(owner=OWNER, repo=REPO)
        req += ["owner", "repo"]
    properties.update(props)
    if paged:
        properties.update(page=PAGE, perPage=PER_PAGE)
    req += required
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties, "required": req, "additionalProperties": False},
        "annotations": {"readOnlyHint": read_only},
    }


def s(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def i(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "integer", "description": description, **extra}


def b(description: str) -> dict[str, Any]:
    return {"type": "boolean", "description": description}


def arr(description: str, items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "description": description, "items": items}


STATE = s("Filter by state.", enum=["open", "closed", "all"])

TOOLS = [
    # repositories
    tool(
        "search_repositories",
        "Search public and accessible repositories by name, topic, language or other GitHub search qualifiers. Returns repository names, descriptions, star counts and default branches.",
        {
            "query": s("Search query, e.g. 'topic:mcp language:python stars:>100'."),
            "sort": s("Sort field.", enum=["stars", "forks", "updated"]),
        },
        ["query"],
        repo=False,
        paged=True,
    ),
    tool(
        "get_repository",
        "Get the details of a repository: description, visibility, default branch, topics, license, star and fork counts, and timestamps of the last push.",
        {},
        [],
    ),
    tool(
        "create_repository",
        "Create a new repository in your account or in an organization you belong to, optionally initialised with a README.",
        {
            "name": s("Name of the new repository."),
            "description": s("Short description."),
            "private": b("Create it as a private repository."),
            "autoInit": b("Initialise the repository with a README."),
            "organization": s("Create the repository in this organization instead of your account."),
        },
        ["name"],
        repo=False,
        read_only=False,
    ),
    tool(
        "fork_repository",
        "Fork a repository into your account or into an organization, keeping the full history of the default branch.",
        {"organization": s("Fork into this organization instead of your account.")},
        [],
        read_only=False,
    ),
    tool(
        "delete_repository",
        "Permanently delete a repository with its issues, pull requests and wiki. This cannot be undone; requires admin rights.",
        {},
        [],
        read_only=False,
    ),
    tool("list_repository_topics", "List the topics (tags) attached to a repository.", {}, []),
    tool(
        "update_repository_settings",
        "Change repository settings such as description, homepage, visibility, default branch, and whether issues, wiki or projects are enabled.",
        {
            "description": s("New description."),
            "homepage": s("Homepage URL."),
            "private": b("Make the repository private."),
            "defaultBranch": s("New default branch."),
            "hasIssues": b("Enable issues."),
            "hasWiki": b("Enable the wiki."),
        },
        [],
        read_only=False,
    ),
    tool(
        "list_contributors",
        "List contributors to a repository, sorted by number of commits.",
        {"anonymous": b("Include anonymous contributors.")},
        [],
        paged=True,
    ),
    tool(
        "list_repository_languages",
        "List the programming languages used in a repository with the number of bytes of code written in each.",
        {},
        [],
    ),
    # contents
    tool(
        "get_file_contents",
        "Get the contents of a file or the listing of a directory at a path in a repository, at a branch, tag or commit.",
        {
            "path": s("Path of the file or directory in the repository."),
            "ref": s("Branch, tag or commit SHA; default branch when omitted."),
        },
        ["path"],
    ),
    tool(
        "create_or_update_file",
        "Create a new file or replace the content of an existing file in a repository with a single commit. Updating requires the SHA of the blob being replaced.",
        {
            "path": s("Path of the file."),
            "content": s("New file content."),
            "message": s("Commit message."),
            "branch": s("Branch to commit to."),
            "sha": s("Blob SHA of the file being replaced, when updating."),
        },
        ["path", "content", "message", "branch"],
        read_only=False,
    ),
    tool(
        "delete_file",
        "Delete a file from a repository branch with a commit.",
        {
            "path": s("Path of the file to delete."),
            "message": s("Commit message."),
            "branch": s("Branch to delete from."),
        },
        ["path", "message", "branch"],
        read_only=False,
    ),
    tool(
        "push_files",
        "Commit several files to a branch in one commit, creating or replacing each of them.",
        {
            "branch": s("Branch to push to."),
            "message": s("Commit message."),
            "files": arr(
                "Files to write.",
                {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                    "required": ["path", "content"],
                },
            ),
        },
        ["branch", "message", "files"],
        read_only=False,
    ),
    tool(
        "search_code",
        "Search source code across repositories with GitHub code search syntax: find where a function, symbol or string is used. Returns file paths with matching fragments.",
        {"query": s("Code search query, e.g. 'repo:owner/name def handle language:python'.")},
        ["query"],
        repo=False,
        paged=True,
    ),
    tool("get_readme", "Get the rendered or raw README of a repository.", {"ref": s("Branch, tag or commit SHA.")}, []),
    # branches, commits, tags
    tool(
        "list_branches",
        "List the branches of a repository with the SHA each one points to and whether it is protected.",
        {"protected": b("Only protected branches.")},
        [],
        paged=True,
    ),
    tool(
        "create_branch",
        "Create a new branch in a repository from another branch or from the default branch.",
        {"branch": s("Name of the new branch."), "fromBranch": s("Branch to start from; default branch when omitted.")},
        ["branch"],
        read_only=False,
    ),
    tool(
        "delete_branch",
        "Delete a branch from a repository.",
        {"branch": s("Branch to delete.")},
        ["branch"],
        read_only=False,
    ),
    tool(
        "get_branch_protection",
        "Get the protection rules of a branch: required reviews, required status checks, and push restrictions.",
        {"branch": s("Branch name.")},
        ["branch"],
    ),
    tool(
        "list_commits",
        "List commits of a branch or path in a repository, newest first, with author, date and message.",
        {
            "sha": s("Branch name or commit SHA to start from."),
            "path": s("Only commits touching this path."),
            "author": s("Only commits by this author login or email."),
        },
        [],
        paged=True,
    ),
    tool(
        "get_commit",
        "Get one commit with its message, author, parent SHAs, changed files and diff statistics.",
        {"sha": s("Commit SHA.")},
        ["sha"],
    ),
    tool(
        "compare_commits",
        "Compare two branches, tags or commits: the commits between them and the combined diff of changed files.",
        {"base": s("Base ref."), "head": s("Head ref.")},
        ["base", "head"],
    ),
    tool("list_tags", "List the tags of a repository with the commit each points to.", {}, [], paged=True),
    tool(
        "create_tag",
        "Create a lightweight tag pointing at a commit.",
        {"tag": s("Tag name."), "sha": s("Commit SHA to tag.")},
        ["tag", "sha"],
        read_only=False,
    ),
    # issues
    tool(
        "list_issues",
        "List issues in a repository, filtered by state, labels, assignee or milestone, sorted by creation or update time.",
        {
            "state": STATE,
            "labels": arr("Only issues with all of these labels.", {"type": "string"}),
            "assignee": s("Only issues assigned to this login."),
            "since": s("Only issues updated at or after this ISO 8601 time."),
            "direction": SORT_DIR,
        },
        [],
        paged=True,
    ),
    tool(
        "get_issue",
        "Get one issue with its title, body, state, labels, assignees and milestone.",
        {"issue_number": i("Issue number.")},
        ["issue_number"],
    ),
    tool(
        "create_issue",
        "Open a new issue in a repository with a title, body, labels and assignees.",
        {
            "title": s("Issue title."),
            "body": s("Issue body in Markdown."),
            "labels": arr("Labels to add.", {"type": "string"}),
            "assignees": arr("Logins to assign.", {"type": "string"}),
        },
        ["title"],
        read_only=False,
    ),
    tool(
        "update_issue",
        "Edit an issue: change its title, body, state (close or reopen), labels, assignees or milestone.",
        {
            "issue_number": i("Issue number."),
            "title": s("New title."),
            "body": s("New body."),
            "state": s("New state.", enum=["open", "closed"]),
            "labels": arr("Replace the labels.", {"type": "string"}),
            "milestone": i("Milestone number."),
        },
        ["issue_number"],
        read_only=False,
    ),
    tool(
        "search_issues",
        "Search issues and pull requests across repositories with GitHub issue search syntax (is:open, label:bug, author:...).",
        {"query": s("Issue search query.")},
        ["query"],
        repo=False,
        paged=True,
    ),
    tool(
        "add_issue_comment",
        "Add a comment to an issue or pull request conversation.",
        {"issue_number": i("Issue or pull request number."), "body": s("Comment text in Markdown.")},
        ["issue_number", "body"],
        read_only=False,
    ),
    tool(
        "list_issue_comments",
        "List the comments of an issue, oldest first.",
        {"issue_number": i("Issue number.")},
        ["issue_number"],
        paged=True,
    ),
    tool(
        "lock_issue",
        "Lock an issue's conversation so only collaborators can comment.",
        {
            "issue_number": i("Issue number."),
            "reason": s("Lock reason.", enum=["off-topic", "too heated", "resolved", "spam"]),
        },
        ["issue_number"],
        read_only=False,
    ),
    tool(
        "list_issue_events",
        "List the timeline events of an issue: labels added, assignments, references and state changes.",
        {"issue_number": i("Issue number.")},
        ["issue_number"],
        paged=True,
    ),
    tool(
        "add_sub_issue",
        "Attach an existing issue as a sub-issue of a parent issue for task tracking.",
        {"issue_number": i("Parent issue number."), "sub_issue_id": i("ID of the issue to attach.")},
        ["issue_number", "sub_issue_id"],
        read_only=False,
    ),
    # labels and milestones
    tool(
        "list_labels", "List the labels defined in a repository with their colors and descriptions.", {}, [], paged=True
    ),
    tool(
        "create_label",
        "Create a label in a repository with a name, color and description.",
        {"name": s("Label name."), "color": s("Hex color without '#'."), "description": s("Label description.")},
        ["name", "color"],
        read_only=False,
    ),
    tool(
        "delete_label",
        "Delete a label from a repository and from every issue that carries it.",
        {"name": s("Label name.")},
        ["name"],
        read_only=False,
    ),
    tool(
        "list_milestones",
        "List the milestones of a repository with due dates and open/closed issue counts.",
        {"state": STATE},
        [],
        paged=True,
    ),
    tool(
        "create_milestone",
        "Create a milestone with a title, description and due date.",
        {"title": s("Milestone title."), "due_on": s("Due date, ISO 8601."), "description": s("Description.")},
        ["title"],
        read_only=False,
    ),
    # pull requests
    tool(
        "list_pull_requests",
        "List pull requests in a repository, filtered by state, base branch or head branch.",
        {
            "state": STATE,
            "base": s("Only PRs into this base branch."),
            "head": s("Only PRs from this head, 'user:branch'."),
            "direction": SORT_DIR,
        },
        [],
        paged=True,
    ),
    tool(
        "get_pull_request",
        "Get one pull request with its title, body, state, base and head branches, mergeability and review status.",
        {"pullNumber": i("Pull request number.")},
        ["pullNumber"],
    ),
    tool(
        "create_pull_request",
        "Open a pull request to merge a head branch into a base branch, optionally as a draft.",
        {
            "title": s("PR title."),
            "body": s("PR description."),
            "head": s("Branch with the changes."),
            "base": s("Branch to merge into."),
            "draft": b("Open as a draft."),
        },
        ["title", "head", "base"],
        read_only=False,
    ),
    tool(
        "update_pull_request",
        "Edit a pull request's title, body, base branch or state, or mark a draft ready for review.",
        {
            "pullNumber": i("Pull request number."),
            "title": s("New title."),
            "body": s("New body."),
            "base": s("New base branch."),
            "state": s("New state.", enum=["open", "closed"]),
        },
        ["pullNumber"],
        read_only=False,
    ),
    tool(
        "merge_pull_request",
        "Merge a pull request with a merge commit, squash or rebase.",
        {
            "pullNumber": i("Pull request number."),
            "merge_method": s("How to merge.", enum=["merge", "squash", "rebase"]),
            "commit_title": s("Title of the merge commit."),
        },
        ["pullNumber"],
        read_only=False,
    ),
    tool(
        "get_pull_request_diff",
        "Get the unified diff of all changes in a pull request.",
        {"pullNumber": i("Pull request number.")},
        ["pullNumber"],
    ),
    tool(
        "get_pull_request_files",
        "List the files changed in a pull request with additions, deletions and patch per file.",
        {"pullNumber": i("Pull request number.")},
        ["pullNumber"],
        paged=True,
    ),
    tool(
        "get_pull_request_status",
        "Get the combined status of all CI checks and commit statuses for a pull request's head commit.",
        {"pullNumber": i("Pull request number.")},
        ["pullNumber"],
    ),
    tool(
        "update_pull_request_branch",
        "Bring a pull request's head branch up to date with its base branch by merging the base into it.",
        {"pullNumber": i("Pull request number.")},
        ["pullNumber"],
        read_only=False,
    ),
    tool(
        "list_pull_request_reviews",
        "List the reviews submitted on a pull request with reviewer, state (approved, changes requested) and body.",
        {"pullNumber": i("Pull request number.")},
        ["pullNumber"],
    ),
    tool(
        "create_pull_request_review",
        "Submit a review on a pull request: approve, request changes or comment, with optional line comments.",
        {
            "pullNumber": i("Pull request number."),
            "event": s("Review action.", enum=["APPROVE", "REQUEST_CHANGES", "COMMENT"]),
            "body": s("Review summary."),
            "comments": arr(
                "Line comments.",
                {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "line": {"type": "integer"}, "body": {"type": "string"}},
                },
            ),
        },
        ["pullNumber", "event"],
        read_only=False,
    ),
    tool(
        "list_pull_request_review_comments",
        "List the line-level review comments left on a pull request's diff.",
        {"pullNumber": i("Pull request number.")},
        ["pullNumber"],
        paged=True,
    ),
    tool(
        "request_reviewers",
        "Request reviews on a pull request from users or teams.",
        {
            "pullNumber": i("Pull request number."),
            "reviewers": arr("User logins.", {"type": "string"}),
            "team_reviewers": arr("Team slugs.", {"type": "string"}),
        },
        ["pullNumber"],
        read_only=False,
    ),
    # releases
    tool(
        "list_releases",
        "List the releases of a repository, newest first, with tag, name and whether it is a draft or prerelease.",
        {},
        [],
        paged=True,
    ),
    tool(
        "get_latest_release",
        "Get the latest published (non-draft, non-prerelease) release of a repository with its assets.",
        {},
        [],
    ),
    tool(
        "create_release",
        "Publish a release from a tag with release notes, optionally as a draft or prerelease, or with generated notes.",
        {
            "tag_name": s("Tag to release."),
            "name": s("Release title."),
            "body": s("Release notes."),
            "draft": b("Create a draft."),
            "prerelease": b("Mark as prerelease."),
            "generate_release_notes": b("Generate notes from merged pull requests."),
        },
        ["tag_name"],
        read_only=False,
    ),
    tool(
        "delete_release",
        "Delete a release (the tag itself is kept).",
        {"release_id": i("Release ID.")},
        ["release_id"],
        read_only=False,
    ),
    # actions / CI
    tool(
        "list_workflows",
        "List the GitHub Actions workflows defined in a repository with their file paths and states.",
        {},
        [],
        paged=True,
    ),
    tool(
        "list_workflow_runs",
        "List runs of GitHub Actions workflows, filtered by workflow, branch, event or status (queued, in_progress, completed, failure).",
        {
            "workflow_id": s("Workflow file name or ID."),
            "branch": s("Only runs on this branch."),
            "status": s("Run status.", enum=["queued", "in_progress", "completed", "success", "failure", "cancelled"]),
        },
        [],
        paged=True,
    ),
    tool(
        "get_workflow_run",
        "Get one workflow run with its status, conclusion, trigger event, head commit and timing.",
        {"run_id": i("Workflow run ID.")},
        ["run_id"],
    ),
    tool(
        "run_workflow",
        "Trigger a workflow_dispatch run of a workflow on a branch or tag with input values.",
        {
            "workflow_id": s("Workflow file name or ID."),
            "ref": s("Branch or tag to run on."),
            "inputs": {
                "type": "object",
                "description": "Workflow input values.",
                "additionalProperties": {"type": "string"},
            },
        },
        ["workflow_id", "ref"],
        read_only=False,
    ),
    tool(
        "rerun_failed_jobs",
        "Re-run only the failed jobs of a workflow run.",
        {"run_id": i("Workflow run ID.")},
        ["run_id"],
        read_only=False,
    ),
    tool(
        "cancel_workflow_run",
        "Cancel a workflow run that is queued or in progress.",
        {"run_id": i("Workflow run ID.")},
        ["run_id"],
        read_only=False,
    ),
    tool(
        "list_workflow_jobs",
        "List the jobs of a workflow run with their steps, status and conclusion.",
        {"run_id": i("Workflow run ID."), "filter": s("Which attempts.", enum=["latest", "all"])},
        ["run_id"],
        paged=True,
    ),
    tool(
        "get_job_logs",
        "Download the log output of a workflow job, or of every failed job in a run, to diagnose CI failures.",
        {
            "job_id": i("Job ID."),
            "run_id": i("Run ID, with failed_only."),
            "failed_only": b("Logs of every failed job in the run."),
            "tail_lines": i("Only the last N lines."),
        },
        [],
    ),
    tool(
        "list_workflow_run_artifacts",
        "List the artifacts uploaded by a workflow run with their sizes and expiry.",
        {"run_id": i("Workflow run ID.")},
        ["run_id"],
        paged=True,
    ),
    # security
    tool(
        "list_code_scanning_alerts",
        "List code scanning (static analysis) alerts in a repository by state, severity and tool.",
        {
            "state": s("Alert state.", enum=["open", "closed", "dismissed", "fixed"]),
            "severity": s("Severity.", enum=["critical", "high", "medium", "low", "warning", "note", "error"]),
            "tool_name": s("Analysis tool, e.g. CodeQL."),
        },
        [],
        paged=True,
    ),
    tool(
        "get_code_scanning_alert",
        "Get one code scanning alert with the rule, location in code and remediation help.",
        {"alertNumber": i("Alert number.")},
        ["alertNumber"],
    ),
    tool(
        "list_dependabot_alerts",
        "List Dependabot alerts about vulnerable dependencies, by state and severity.",
        {
            "state": s("Alert state.", enum=["open", "dismissed", "fixed", "auto_dismissed"]),
            "severity": s("Severity.", enum=["low", "medium", "high", "critical"]),
        },
        [],
        paged=True,
    ),
    tool(
        "list_secret_scanning_alerts",
        "List secret scanning alerts: leaked credentials and tokens found in the repository history.",
        {"state": s("Alert state.", enum=["open", "resolved"]), "secret_type": s("Only this kind of secret.")},
        [],
        paged=True,
    ),
    tool(
        "list_repository_secrets",
        "List the names of the Actions secrets of a repository (values are never returned).",
        {},
        [],
        paged=True,
    ),
    tool(
        "set_repository_secret",
        "Create or update an encrypted Actions secret of a repository.",
        {"secret_name": s("Secret name."), "value": s("Secret value; encrypted before upload.")},
        ["secret_name", "value"],
        read_only=False,
    ),
    # collaboration
    tool(
        "list_collaborators",
        "List the collaborators of a repository with their permission level.",
        {"permission": s("Only this permission.", enum=["pull", "triage", "push", "maintain", "admin"])},
        [],
        paged=True,
    ),
    tool(
        "add_collaborator",
        "Invite a user to collaborate on a repository with a permission level.",
        {
            "username": s("User login."),
            "permission": s("Permission to grant.", enum=["pull", "triage", "push", "maintain", "admin"]),
        },
        ["username"],
        read_only=False,
    ),
    tool(
        "list_teams",
        "List the teams of an organization with their slugs and privacy.",
        {"org": s("Organization login.")},
        ["org"],
        repo=False,
        paged=True,
    ),
    tool(
        "list_team_members",
        "List the members of an organization team.",
        {"org": s("Organization login."), "team_slug": s("Team slug.")},
        ["org", "team_slug"],
        repo=False,
        paged=True,
    ),
    tool("get_me", "Get the profile of the authenticated user: login, name, email and plan.", {}, [], repo=False),
    tool(
        "search_users",
        "Search users and organizations by login, name, location or follower count.",
        {"query": s("User search query, e.g. 'location:berlin followers:>100'.")},
        ["query"],
        repo=False,
        paged=True,
    ),
    # notifications
    tool(
        "list_notifications",
        "List your unread notifications: mentions, review requests, assignments and CI results across repositories.",
        {"all": b("Include notifications already read."), "participating": b("Only where you participate.")},
        [],
        repo=False,
        paged=True,
    ),
    tool(
        "mark_notifications_read",
        "Mark all notifications, or those of one repository, as read.",
        {"owner": OWNER, "repo": REPO, "lastReadAt": s("Mark notifications up to this ISO 8601 time.")},
        [],
        repo=False,
        read_only=False,
    ),
    tool(
        "manage_repository_subscription",
        "Watch, unwatch or ignore a repository's notifications.",
        {"action": s("Subscription action.", enum=["watch", "ignore", "delete"])},
        ["action"],
        read_only=False,
    ),
    # discussions, gists, webhooks, projects, deployments
    tool(
        "list_discussions",
        "List the discussions of a repository, optionally in one category.",
        {"category": s("Discussion category slug.")},
        [],
        paged=True,
    ),
    tool(
        "get_discussion_comments",
        "Get the comments and replies of one discussion.",
        {"discussionNumber": i("Discussion number.")},
        ["discussionNumber"],
        paged=True,
    ),
    tool(
        "create_gist",
        "Create a gist from one or more files, public or secret.",
        {
            "description": s("Gist description."),
            "public": b("Make the gist public."),
            "files": {
                "type": "object",
                "description": "File name to content.",
                "additionalProperties": {"type": "string"},
            },
        },
        ["files"],
        repo=False,
        read_only=False,
    ),
    tool(
        "list_gists",
        "List the gists of the authenticated user or of another user.",
        {"username": s("Another user's login.")},
        [],
        repo=False,
        paged=True,
    ),
    tool(
        "list_webhooks",
        "List the webhooks of a repository with their URLs, events and last delivery status.",
        {},
        [],
        paged=True,
    ),
    tool(
        "create_webhook",
        "Create a repository webhook that posts chosen events (push, pull_request, issues...) to a URL.",
        {
            "url": s("Payload URL."),
            "events": arr("Events to deliver.", {"type": "string"}),
            "secret": s("Secret for signing payloads."),
            "content_type": s("Payload format.", enum=["json", "form"]),
        },
        ["url"],
        read_only=False,
    ),
    tool(
        "list_project_items",
        "List the items (issues, pull requests, drafts) on a project board with their field values.",
        {"org": s("Organization owning the project."), "project_number": i("Project number.")},
        ["org", "project_number"],
        repo=False,
        paged=True,
    ),
    tool(
        "list_deployments",
        "List deployments of a repository by environment, with their statuses.",
        {"environment": s("Environment name, e.g. production.")},
        [],
        paged=True,
    ),
    tool(
        "create_deployment",
        "Create a deployment of a ref to an environment.",
        {
            "ref": s("Branch, tag or SHA to deploy."),
            "environment": s("Target environment."),
            "description": s("Deployment description."),
        },
        ["ref"],
        read_only=False,
    ),
    tool("list_environments", "List the deployment environments of a repository with protection rules.", {}, []),
    tool(
        "get_rate_limit",
        "Get the API rate limit status: remaining requests and reset time for each resource.",
        {},
        [],
        repo=False,
    ),
]


def main() -> None:
    names = [t["name"] for t in TOOLS]
    assert len(names) == len(set(names)), "duplicate tool names"
    (HERE / "github_like_tools.json").write_text(json.dumps(TOOLS, indent=1) + "\n", encoding="utf-8")
    print(f"{len(TOOLS)} tools written to {HERE / 'github_like_tools.json'}")


if __name__ == "__main__":
    main()
