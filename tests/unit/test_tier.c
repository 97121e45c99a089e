/* Unit tests for src/policy/tier.c: every pattern of the table, with matches and near misses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy/shell.h"
#include "policy/tier.h"
#include "util/fs.h"
#include "helpers.h"
#include "util/banned.h"

/* A command, the pattern it must match ("" for normal) and, for a near miss, the pattern it
 * must not be taken for. */
struct tcase {
    const char *cmd;
    const char *want;
    const char *near;
};

#define HIT(c, id)                                                                                 \
    {                                                                                              \
        c, id, NULL                                                                                \
    }
#define MISS(c, id)                                                                                \
    {                                                                                              \
        c, "", id                                                                                  \
    }

static const struct tcase cases[] = {
    /* rm: every spelling of recursive, every protected target */
    HIT("rm -rf /", "rm-recursive-root"),
    HIT("rm -fr /", "rm-recursive-root"),
    HIT("rm -r -f /", "rm-recursive-root"),
    HIT("rm -R /", "rm-recursive-root"),
    HIT("rm --recursive --force /", "rm-recursive-root"),
    HIT("rm -rfv /*", "rm-recursive-root"),
    HIT("rm -rf --no-preserve-root /", "rm-recursive-root"),
    HIT("rm --no-preserve-root -r //", "rm-recursive-root"),
    HIT("sudo rm -rf /", "rm-recursive-root"),
    HIT("/usr/bin/rm -rf /", "rm-recursive-root"),
    HIT("sudo -E env FOO=1 nice -n 5 timeout 10 /bin/rm -rf /", "rm-recursive-root"),
    HIT("rm -rf -- /", "rm-recursive-root"),
    HIT("rm -rf /.", "rm-recursive-root"),
    HIT("rm -rf /./", "rm-recursive-root"),
    HIT("sudo su - root -c 'rm -rf /'", "rm-recursive-root"),
    HIT("rm -rf ~", "rm-recursive-home"),
    HIT("rm -rf ~/", "rm-recursive-home"),
    HIT("rm -rf ~/*", "rm-recursive-home"),
    HIT("rm -rf $HOME", "rm-recursive-home"),
    HIT("rm -rf \"$HOME\"", "rm-recursive-home"),
    HIT("rm -rf ${HOME}", "rm-recursive-home"),
    HIT("rm -rf $HOME/", "rm-recursive-home"),
    HIT("rm -rf .", "rm-recursive-cwd"),
    HIT("rm -rf ..", "rm-recursive-cwd"),
    HIT("rm -rf ./", "rm-recursive-cwd"),
    HIT("rm -rf *", "rm-recursive-cwd"),
    HIT("rm -rf ./*", "rm-recursive-cwd"),
    HIT("rm -rf ../..", "rm-recursive-cwd"),
    HIT("rm -rf \"$(pwd)\"", "rm-recursive-cwd"),
    HIT("rm -rf $PWD/*", "rm-recursive-cwd"),
    HIT("rm -rf ../../*", "rm-recursive-cwd"),
    HIT("rm -rf .git", "rm-recursive-git"),
    HIT("rm -rf ./.git/", "rm-recursive-git"),
    HIT("rm -rf /etc", "rm-recursive-system"),
    HIT("rm -rf /usr/", "rm-recursive-system"),
    HIT("rm -rf /var/*", "rm-recursive-system"),
    HIT("rm -Rf /home", "rm-recursive-system"),
    HIT("rm -rf /bin /boot /lib /opt /root /sbin /srv /sys /proc /dev", "rm-recursive-system"),
    HIT("cd /tmp && rm -rf /", "rm-recursive-root"),
    HIT("echo ok; rm -rf ~", "rm-recursive-home"),
    HIT("(cd x || rm -rf .)", "rm-recursive-cwd"),
    HIT("{ rm -rf .git; }", "rm-recursive-git"),
    HIT("bash -c 'rm -rf /'", "rm-recursive-root"),
    HIT("sh -ec \"cd / && rm -rf *\"", "rm-recursive-cwd"),
    HIT("bash -lc 'sudo rm -rf ~'", "rm-recursive-home"),
    HIT("echo $(rm -rf /)", "rm-recursive-root"),
    HIT("echo `rm -rf ~`", "rm-recursive-home"),
    HIT("xargs rm -rf / < list", "rm-recursive-root"),
    HIT("r'm' -rf /", "rm-recursive-root"),
    HIT("eval rm -rf /", "rm-recursive-root"),
    HIT("bash <<< 'rm -rf /'", "rm-recursive-root"),
    HIT("cat <<EOF | sh\nrm -rf ~\nEOF", "rm-recursive-home"),
    MISS("echo \"rm -rf /\"", "rm-recursive-root"),
    MISS("grep -r \"rm -rf\" .", "rm-recursive-cwd"),
    MISS("rm -rf node_modules", "rm-recursive-cwd"),
    MISS("rm -rf /tmp/x", "rm-recursive-root"),
    MISS("su - root -c 'ls /'", "rm-recursive-root"),
    MISS("rm -rf ./build", "rm-recursive-cwd"),
    MISS("# rm -rf /", "rm-recursive-root"),
    MISS("echo hi # rm -rf /", "rm-recursive-root"),
    MISS("rm -f /", "rm-recursive-root"),
    MISS("rm -rf /etc/nginx/conf.d/old", "rm-recursive-system"),
    MISS("rm -rf ~/project/build", "rm-recursive-home"),
    MISS("rm -rf \"~\"", "rm-recursive-home"),
    MISS("rm -rf '$HOME'", "rm-recursive-home"),
    MISS("rm -rf .gitignore.bak", "rm-recursive-git"),
    MISS("rm -rf ./*.o", "rm-recursive-cwd"),
    MISS("rm -rf ../build", "rm-recursive-cwd"),
    MISS("rm -rf \"$(pwd)/build\"", "rm-recursive-cwd"),
    MISS("rm -rf '$PWD'", "rm-recursive-cwd"),
    MISS("rm -rf ...", "rm-recursive-cwd"),
    MISS("git rm -r .", "rm-recursive-cwd"),
    MISS("cat <<EOF > notes.txt\nrm -rf /\nEOF", "rm-recursive-root"),
    MISS("printf '%s\\n' 'rm -rf /' | tee plan.txt", "rm-recursive-root"),

    /* find */
    HIT("find / -delete", "find-delete-protected"),
    HIT("find ~ -type f -delete", "find-delete-protected"),
    HIT("find . -exec rm -rf {} +", "find-delete-protected"),
    HIT("find /etc -execdir /bin/rm {} \\;", "find-delete-protected"),
    HIT("sudo find -L / -delete", "find-delete-protected"),
    MISS("find . -name '*.pyc' -delete", "find-delete-protected"),
    MISS("find /tmp/build -delete", "find-delete-protected"),
    MISS("find / -name core", "find-delete-protected"),
    MISS("find . -type f -exec grep -l x {} +", "find-delete-protected"),

    /* git */
    HIT("git push --force", "git-push-force"),
    HIT("git push -f origin main", "git-push-force"),
    HIT("git push origin main -f", "git-push-force"),
    HIT("git push -uf origin x", "git-push-force"),
    HIT("git push --force-with-lease", "git-push-force"),
    HIT("git push --force-with-lease=main:abc origin main", "git-push-force"),
    HIT("git push origin +main", "git-push-force"),
    HIT("git push origin +HEAD:refs/heads/main", "git-push-force"),
    HIT("git -C repo -c x=y push --force", "git-push-force"),
    HIT("git push --mirror backup", "git-push-force"),
    MISS("git push", "git-push-force"),
    MISS("git push origin main", "git-push-force"),
    MISS("git push -u origin feature", "git-push-force"),
    MISS("git push -o ci.skip origin main", "git-push-force"),
    MISS("git pull --force", "git-push-force"),
    MISS("echo git push --force", "git-push-force"),
    HIT("git push origin --delete feature", "git-push-delete"),
    HIT("git push origin :feature", "git-push-delete"),
    HIT("git push -d origin x", "git-push-delete"),
    MISS("git push origin feature:feature", "git-push-delete"),
    MISS("git branch -d merged", "git-push-delete"),
    HIT("git reset --hard", "git-reset-hard"),
    HIT("git reset --hard HEAD~3", "git-reset-hard"),
    HIT("git -C x reset -q --hard origin/main", "git-reset-hard"),
    MISS("git reset --soft HEAD~1", "git-reset-hard"),
    MISS("git reset HEAD file", "git-reset-hard"),
    MISS("git log --hard", "git-reset-hard"),
    HIT("git clean -fd", "git-clean-force"),
    HIT("git clean -fdx", "git-clean-force"),
    HIT("git clean -xdf", "git-clean-force"),
    HIT("git clean -f -d", "git-clean-force"),
    HIT("git clean --force -x", "git-clean-force"),
    HIT("git clean -fX", "git-clean-force"),
    MISS("git clean -n", "git-clean-force"),
    MISS("git clean -fdn", "git-clean-force"),
    MISS("git clean -fdx --dry-run", "git-clean-force"),
    MISS("git clean -f", "git-clean-force"),
    MISS("git clean -dx", "git-clean-force"),
    HIT("git branch -D feature", "git-branch-force-delete"),
    HIT("git branch --delete --force feature", "git-branch-force-delete"),
    HIT("git branch -d -f feature", "git-branch-force-delete"),
    MISS("git branch -d merged", "git-branch-force-delete"),
    MISS("git branch feature", "git-branch-force-delete"),
    MISS("git checkout -D x", "git-branch-force-delete"),

    /* disks */
    HIT("dd if=/dev/zero of=/dev/sda bs=1M", "dd-to-device"),
    HIT("sudo dd if=img of=/dev/nvme0n1", "dd-to-device"),
    HIT("dd of=/dev/disk/by-id/usb-x", "dd-to-device"),
    MISS("dd of=./disk.img", "dd-to-device"),
    MISS("dd if=/dev/sda of=backup.img", "dd-to-device"),
    MISS("dd if=/dev/zero of=/dev/null count=1", "dd-to-device"),
    HIT("mkfs /dev/sdb1", "mkfs"),
    HIT("mkfs.ext4 /dev/sdb1", "mkfs"),
    HIT("sudo /sbin/mkfs.xfs -f /dev/vdb", "mkfs"),
    HIT("mke2fs /dev/sdc", "mkfs"),
    MISS("echo mkfs.ext4 /dev/sdb1", "mkfs"),
    MISS("man mkfs", "mkfs"),
    HIT("echo x > /dev/sda", "write-block-device"),
    HIT("cat img >/dev/nvme0n1p1", "write-block-device"),
    HIT("> /dev/sdb", "write-block-device"),
    HIT("cat img | sudo tee /dev/mmcblk0", "write-block-device"),
    HIT("(cat a b) > /dev/hda", "write-block-device"),
    MISS("echo x > /dev/null", "write-block-device"),
    MISS("make 2>/dev/null >/dev/stdout", "write-block-device"),
    MISS("cat /dev/sda > disk.img", "write-block-device"),
    MISS("echo /dev/sda", "write-block-device"),

    /* permissions */
    HIT("chmod -R 777 /", "chmod-recursive-protected"),
    HIT("sudo chmod --recursive a+w ~", "chmod-recursive-protected"),
    HIT("chmod -R 000 $HOME", "chmod-recursive-protected"),
    HIT("chmod -R u+x /etc", "chmod-recursive-protected"),
    MISS("chmod -R 755 ./build", "chmod-recursive-protected"),
    MISS("chmod 755 /", "chmod-recursive-protected"),
    HIT("chown -R me /", "chown-recursive-protected"),
    HIT("sudo chown -R nobody:nogroup ~/", "chown-recursive-protected"),
    HIT("chgrp -R staff /usr", "chown-recursive-protected"),
    MISS("chown -R me:me ./src", "chown-recursive-protected"),
    MISS("chown me ~", "chown-recursive-protected"),

    /* download into an interpreter */
    HIT("curl -fsSL https://get.example.com | sh", "download-into-shell"),
    HIT("curl -s x | sudo bash", "download-into-shell"),
    HIT("wget -qO- https://x | zsh", "download-into-shell"),
    HIT("wget -O - x | python3 -", "download-into-shell"),
    HIT("curl x | python", "download-into-shell"),
    HIT("curl x | bash -s -- --yes", "download-into-shell"),
    HIT("curl x | tee install.sh | sh", "download-into-shell"),
    HIT("(curl x) | sh", "download-into-shell"),
    HIT("/bin/bash -c \"$(curl -fsSL https://x/install.sh)\"", "download-into-shell"),
    HIT("sh -c \"`wget -qO- x`\"", "download-into-shell"),
    HIT("bash <(curl -s https://x)", "download-into-shell"),
    HIT("source <(curl -s https://x)", "download-into-shell"),
    HIT("eval \"$(curl -s https://x)\"", "download-into-shell"),
    MISS("cat file | sh", "download-into-shell"),
    MISS("curl -o install.sh https://x", "download-into-shell"),
    MISS("curl x | python3 -m json.tool", "download-into-shell"),
    MISS("curl x | python3 -c 'import json,sys; print(json.load(sys.stdin))'",
         "download-into-shell"),
    MISS("curl x | jq .", "download-into-shell"),
    MISS("curl x > a; sh a", "download-into-shell"),
    MISS("curl x | bash -c 'wc -l'", "download-into-shell"),
    MISS("curl x | sh script.sh", "download-into-shell"),
    MISS("bash -c \"$(cat local.sh)\"", "download-into-shell"),
    MISS("echo \"$(curl -s https://x)\"", "download-into-shell"),
    MISS("diff <(curl -s a) <(curl -s b)", "download-into-shell"),
    MISS("source <(kubectl completion bash)", "download-into-shell"),

    /* SQL */
    HIT("psql -c 'DROP TABLE users'", "sql-drop-truncate"),
    HIT("psql -U app -d prod -c \"drop database x\"", "sql-drop-truncate"),
    HIT("psql --command='TRUNCATE orders'", "sql-drop-truncate"),
    HIT("mysql -e 'Drop Table t'", "sql-drop-truncate"),
    HIT("mysql --execute \"truncate table t;\"", "sql-drop-truncate"),
    HIT("sqlite3 app.db 'DROP TABLE t'", "sql-drop-truncate"),
    HIT("mongo --eval 'db.x.drop ()' ", "sql-drop-truncate"),
    HIT("dropdb prod", "sql-drop-truncate"),
    MISS("printf 'DROP TABLE'", "sql-drop-truncate"),
    MISS("psql -c 'SELECT * FROM drops'", "sql-drop-truncate"),
    MISS("psql -c \"SELECT 'drop table'\"", "sql-drop-truncate"),
    MISS("mysql -e 'SELECT dropped_at FROM t'", "sql-drop-truncate"),
    MISS("sqlite3 drop.db .tables", "sql-drop-truncate"),
    MISS("echo \"psql -c 'DROP TABLE x'\"", "sql-drop-truncate"),

    /* kubernetes, terraform, docker, cloud, hosted repositories */
    HIT("kubectl delete namespace prod", "kubectl-delete-namespace"),
    HIT("kubectl delete ns prod", "kubectl-delete-namespace"),
    HIT("kubectl --context x delete ns/prod", "kubectl-delete-namespace"),
    HIT("kubectl delete pods,namespaces x", "kubectl-delete-namespace"),
    MISS("kubectl get ns", "kubectl-delete-namespace"),
    MISS("kubectl delete pod web-1 -n prod", "kubectl-delete-namespace"),
    HIT("kubectl delete pods --all", "kubectl-delete-all"),
    HIT("kubectl -n prod delete deploy --all", "kubectl-delete-all"),
    HIT("kubectl delete pods --all-namespaces -l app=x", "kubectl-delete-all"),
    MISS("kubectl get pods --all", "kubectl-delete-all"),
    MISS("kubectl delete pod x", "kubectl-delete-all"),
    HIT("terraform destroy", "terraform-destroy"),
    HIT("terraform -chdir=infra destroy -auto-approve", "terraform-destroy"),
    HIT("terraform apply -destroy", "terraform-destroy"),
    HIT("tofu destroy", "terraform-destroy"),
    MISS("terraform plan -destroy", "terraform-destroy"),
    MISS("terraform apply", "terraform-destroy"),
    MISS("echo terraform destroy", "terraform-destroy"),
    HIT("docker system prune -a", "docker-system-prune-all"),
    HIT("docker system prune --all --force", "docker-system-prune-all"),
    HIT("docker system prune -af", "docker-system-prune-all"),
    MISS("docker system prune", "docker-system-prune-all"),
    MISS("docker image prune -a", "docker-system-prune-all"),
    HIT("aws s3 rm s3://bucket --recursive", "cloud-storage-recursive-delete"),
    HIT("aws --profile p s3 rb s3://bucket --force", "cloud-storage-recursive-delete"),
    HIT("gsutil rm -r gs://bucket", "cloud-storage-recursive-delete"),
    HIT("gsutil -m rm -r gs://bucket/**", "cloud-storage-recursive-delete"),
    HIT("gcloud storage rm -r gs://bucket", "cloud-storage-recursive-delete"),
    HIT("gcloud storage rm --recursive gs://b", "cloud-storage-recursive-delete"),
    HIT("az storage blob delete-batch -s container", "cloud-storage-recursive-delete"),
    MISS("aws s3 rm s3://bucket/one.txt", "cloud-storage-recursive-delete"),
    MISS("aws s3 ls s3://bucket --recursive", "cloud-storage-recursive-delete"),
    MISS("gsutil rm gs://bucket/x", "cloud-storage-recursive-delete"),
    MISS("az storage blob delete -c c -n x", "cloud-storage-recursive-delete"),
    HIT("gh repo delete me/x --yes", "gh-repo-delete"),
    HIT("gh repo delete", "gh-repo-delete"),
    MISS("gh repo view me/x", "gh-repo-delete"),
    MISS("gh issue delete 12", "gh-repo-delete"),

    /* fork bombs */
    HIT(":(){ :|:& };:", "fork-bomb"),
    HIT(":(){ :|: & };:", "fork-bomb"),
    HIT("bomb() { bomb | bomb & }; bomb", "fork-bomb"),
    HIT("function f { f & f; }; f", "fork-bomb"),
    MISS("f() { echo hi; }; f; f", "fork-bomb"),
    MISS("retry() { retry; }", "fork-bomb"),
    MISS("f() { f; }; f() { f; }", "fork-bomb"),
    MISS("echo ':(){ :|:& };:'", "fork-bomb"),

    /* everyday commands */
    MISS("git status", NULL),
    MISS("npm test -- --watch=false", NULL),
    MISS("cd src && make -j4 2>&1 | tail -n 20", NULL),
    MISS("rm -f build/*.o", NULL),
    MISS("rm -r dist", NULL),
    MISS("sudo apt-get install -y jq", NULL),
};

static void test_cases(void **state)
{
    int bad = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct tier_result r;
        const struct tcase *c = &cases[i];
        int rc = tier_of_command(c->cmd, strlen(c->cmd), &r);
        if (rc != 0) {
            print_error("'%s': error %d (%s)\n", c->cmd, rc, r.command);
            bad++;
            continue;
        }
        if (strcmp(r.pattern, c->want) != 0 ||
            r.level != (c->want[0] ? TIER_DESTRUCTIVE : TIER_NORMAL)) {
            print_error("'%s': want '%s', got level %d '%s' (%s)\n", c->cmd, c->want, r.level,
                        r.pattern, r.command);
            bad++;
        }
        if (r.level == TIER_NORMAL && (r.pattern[0] || r.command[0])) {
            print_error("'%s': normal with a pattern or command\n", c->cmd);
            bad++;
        }
    }
    assert_int_equal(bad, 0);
}

/* Every pattern of the table has at least one match and one near miss above, every case names
 * a pattern of the table, and the ids are unique and fit tier_result.pattern. */
static void test_table(void **state)
{
    size_t n;
    const char *const *ids = tier_pattern_ids(&n);

    (void)state;
    assert_true(n >= 20);
    for (size_t i = 0; i < n; i++) {
        int hit = 0, miss = 0;
        assert_non_null(ids[i]);
        assert_true(strlen(ids[i]) < sizeof(((struct tier_result *)0)->pattern));
        for (size_t j = 0; j < i; j++)
            if (strcmp(ids[i], ids[j]) == 0)
                fail_msg("pattern '%s' twice", ids[i]);
        for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
            if (strcmp(cases[k].want, ids[i]) == 0)
                hit++;
            if (cases[k].near && strcmp(cases[k].near, ids[i]) == 0)
                miss++;
        }
        if (hit == 0 || miss == 0)
            fail_msg("pattern '%s': %d matches, %d near misses", ids[i], hit, miss);
    }
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const char *id = cases[k].want[0] ? cases[k].want : cases[k].near;
        int found = id == NULL;
        for (size_t i = 0; i < n && !found; i++)
            found = strcmp(id, ids[i]) == 0;
        if (!found)
            fail_msg("case '%s' names '%s', not in the table", cases[k].cmd, id);
    }
}

static void test_result(void **state)
{
    struct tier_result r;
    const char *cmd = "cd /tmp && sudo rm -rf \"$HOME\" 'a b'";
    char big[600];

    (void)state;
    assert_int_equal(tier_of_command(cmd, strlen(cmd), &r), 0);
    assert_int_equal(r.level, TIER_DESTRUCTIVE);
    assert_string_equal(r.pattern, "rm-recursive-home");
    assert_string_equal(r.command, "sudo rm -rf '$HOME' 'a b'");

    /* a long command is cut with "..." and stays a C string */
    memcpy(big, "rm -rf / ", 9);
    memset(big + 9, 'x', sizeof(big) - 10);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(tier_of_command(big, strlen(big), &r), 0);
    assert_int_equal(r.level, TIER_DESTRUCTIVE);
    assert_true(strlen(r.command) < sizeof(r.command));
    assert_string_equal(r.command + strlen(r.command) - 3, "...");

    /* unparsable: TIER_UNPARSED with the parser's message */
    assert_int_equal(tier_of_command("rm -rf '/", 9, &r), ERR_INVALID);
    assert_int_equal(r.level, TIER_UNPARSED);
    assert_string_equal(r.pattern, "");
    assert_non_null(strstr(r.command, "unterminated single quote"));

    /* the length is honoured: the text after len is not read */
    assert_int_equal(tier_of_command("ls; rm -rf /", 2, &r), 0);
    assert_int_equal(r.level, TIER_NORMAL);
}

/* docs/gate.md's table names every pattern id as a row: | `id` | */
static void test_doc_names_every_pattern(void **state)
{
    const char *root = getenv("FAULTLINE_ROOT");
    struct buf path = BUF_INIT, doc = BUF_INIT;
    struct err e = {0};
    const char *const *ids;
    size_t n;

    (void)state;
    buf_addf(&path, "%s/docs/gate.md", root ? root : ".");
    assert_int_equal(fs_read_file(path.data, 1 << 20, &doc, &e), 0);
    ids = tier_pattern_ids(&n);
    for (size_t i = 0; i < n; i++) {
        char needle[80];
        snprintf(needle, sizeof(needle), "\n| `%s` |", ids[i]);
        if (strstr(doc.data, needle) == NULL)
            fail_msg("docs/gate.md has no row for pattern %s", ids[i]);
    }
    buf_release(&path);
    buf_release(&doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_result),
        cmocka_unit_test(test_doc_names_every_pattern),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
