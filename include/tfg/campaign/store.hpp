#pragma once
/// \file
/// The campaign store: one SQLite database per campaign holding the per-round log, the
/// deduplicated findings (with up to 100 instances each) and per-round metrics.
///
/// Durability contract (docs/campaign-store.md): journal_mode=WAL with synchronous=FULL, and
/// every public write is one transaction, committed before the call returns. A write that has
/// returned survives kill -9 of the process and (given honest disks) power loss; a write that
/// threw or was interrupted leaves no partial state. Errors are thrown as store_error carrying
/// the SQLite message; open() reports them as an expected error instead.
///
/// A `store` is one connection: use it from one thread at a time, and never across fork()
/// (open a new one in the child). Several processes may open the same file (busy_timeout 10 s).
#include <sqlite3.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tfg/campaign/round.hpp"
#include "tfg/oracle/finding.hpp"
#include "tfg/util/expected.hpp"

namespace tfg::campaign {

/// Any SQLite failure after open; what() carries the SQLite message and the failing step.
class store_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One row of the round log: what the loop did in round `round`.
struct round_record {
  std::int64_t round = 0;
  std::string policy;           ///< "linucb", ...
  std::int64_t candidates = 0;  ///< retained candidates this round
  std::string op;               ///< selected operator ("" when none)
  std::string site;             ///< human description of the anchor site
  std::int64_t arm = -1;
  std::array<double, 5> context{};  ///< L T M P I
  double reward = 0;
  round_verdict verdict = round_verdict::legal;
  std::string reason;  ///< why illegal / rejected, or the finding id(s)
  bool accepted = false;
  std::int64_t new_labels = 0, new_transitions = 0;
  std::string model_hash;  ///< the seed graph mutated this round
  /// "profile","construct","select",... (stored as JSON); a dotted key ("execute.load") is a part
  /// of the phase before its dot, not a phase of its own.
  std::map<std::string, double> phase_ms;
  std::string extra_json;  ///< free-form JSON text the loop wants to keep

  friend bool operator==(const round_record&, const round_record&) = default;
};

/// One deduplicated finding. `message` and `dir` are those of the first instance.
struct finding_row {
  std::string id, kind, title, key, culprit_op, config_a, config_b, dtype, device, message, dir, status;
  std::int64_t first_round = 0, last_round = 0, instances = 0;
  double reliability = -1;  ///< fraction of successful reproductions; -1 = not yet reproduced
};

/// A finding row as JSON (findings.jsonl of report and fuzz): every field by its name.
inline void to_json(nlohmann::json& j, const finding_row& f) {
  j = {{"id", f.id},
       {"kind", f.kind},
       {"title", f.title},
       {"culprit_op", f.culprit_op},
       {"config_a", f.config_a},
       {"config_b", f.config_b},
       {"dtype", f.dtype},
       {"device", f.device},
       {"status", f.status},
       {"first_round", f.first_round},
       {"last_round", f.last_round},
       {"instances", f.instances},
       {"reliability", f.reliability},
       {"dir", f.dir},
       {"key", f.key},
       {"message", f.message}};
}
/// The inverse of to_json; a missing field keeps its default.
inline void from_json(const nlohmann::json& j, finding_row& f) {
  auto text = [&](const char* k) { return j.value(k, std::string()); };
  f.id = text("id");
  f.kind = text("kind");
  f.title = text("title");
  f.key = text("key");
  f.culprit_op = text("culprit_op");
  f.config_a = text("config_a");
  f.config_b = text("config_b");
  f.dtype = text("dtype");
  f.device = text("device");
  f.message = text("message");
  f.dir = text("dir");
  f.status = text("status");
  f.first_round = j.value("first_round", std::int64_t{0});
  f.last_round = j.value("last_round", std::int64_t{0});
  f.instances = j.value("instances", std::int64_t{0});
  f.reliability = j.value("reliability", -1.0);
}

/// One stored instance of a finding (the newest `max_instances_per_finding` are kept).
struct finding_instance {
  std::int64_t seq = 0;  ///< 0-based instance number over the campaign
  std::int64_t round = 0;
  std::string message, dir;
};

class store {
 public:
  /// Bumped on any incompatible schema change; open() refuses other versions.
  static constexpr int schema_version = 1;
  /// Instances kept per finding; older ones are overwritten (syzkaller keeps 100).
  static constexpr std::int64_t max_instances_per_finding = 100;

  /// Opens (creating when absent) the database at `db_file`; its folder must exist. A new file
  /// gets the schema; an existing one must carry schema_version in its meta table.
  static tfg::expected<store, std::string> open(const std::filesystem::path& db_file) {
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(db_file.c_str(), &raw,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    store s;
    s.db_.reset(raw);  // closed on every path below
    if (rc != SQLITE_OK)
      return tfg::unexpected(std::string("cannot open ") + db_file.string() + ": " +
                             (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
    try {
      s.init_schema();
    } catch (const std::exception& e) {
      return tfg::unexpected(db_file.string() + ": " + e.what());
    }
    return s;
  }

  store(store&&) noexcept = default;
  store& operator=(store&& o) noexcept {
    if (this != &o) {
      stmts_.clear();  // statements before their connection
      db_ = std::move(o.db_);
      stmts_ = std::move(o.stmts_);
    }
    return *this;
  }
  store(const store&) = delete;
  store& operator=(const store&) = delete;
  ~store() { stmts_.clear(); }  // finalize statements, then db_ closes (checkpointing the WAL)

  /// Sets a meta value (insert or replace). Keys starting with "tfg." are reserved.
  void set_meta(std::string_view key, std::string_view value) {
    transaction tx(*this);
    auto& st = prepare("INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)");
    st.bind(1, key).bind(2, value).run();
    tx.commit();
  }

  [[nodiscard]] std::optional<std::string> meta(std::string_view key) const {
    auto& st = prepare("SELECT value FROM meta WHERE key = ?1");
    st.bind(1, key);
    if (!st.step()) return std::nullopt;
    std::string v = st.text(0);
    st.reset();
    return v;
  }

  /// Inserts or replaces the row of `r.round` (a resumed campaign may redo a round).
  void put_round(const round_record& r) {
    transaction tx(*this);
    nlohmann::json phases = nlohmann::json::object();
    for (const auto& [k, v] : r.phase_ms) phases[k] = v;
    auto& st = prepare(
        "INSERT OR REPLACE INTO rounds(round, policy, candidates, op, site, arm, ctx_l, ctx_t, "
        "ctx_m, ctx_p, ctx_i, reward, verdict, reason, accepted, new_labels, new_transitions, "
        "model_hash, phase_ms, extra_json) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,"
        "?14,?15,?16,?17,?18,?19,?20)");
    st.bind(1, r.round).bind(2, r.policy).bind(3, r.candidates).bind(4, r.op).bind(5, r.site);
    st.bind(6, r.arm);
    for (int i = 0; i < 5; ++i) st.bind(7 + i, r.context[static_cast<std::size_t>(i)]);
    st.bind(12, r.reward).bind(13, to_string(r.verdict)).bind(14, r.reason);
    st.bind(15, static_cast<std::int64_t>(r.accepted ? 1 : 0));
    st.bind(16, r.new_labels).bind(17, r.new_transitions).bind(18, r.model_hash);
    st.bind(19, phases.dump()).bind(20, r.extra_json);
    st.run();
    tx.commit();
  }

  /// All rounds, ordered by round.
  [[nodiscard]] std::vector<round_record> rounds() const {
    auto& st = prepare(
        "SELECT round, policy, candidates, op, site, arm, ctx_l, ctx_t, ctx_m, ctx_p, ctx_i, "
        "reward, verdict, reason, accepted, new_labels, new_transitions, model_hash, phase_ms, "
        "extra_json FROM rounds ORDER BY round");
    std::vector<round_record> out;
    while (st.step()) {
      round_record r;
      r.round = st.i64(0);
      r.policy = st.text(1);
      r.candidates = st.i64(2);
      r.op = st.text(3);
      r.site = st.text(4);
      r.arm = st.i64(5);
      for (int i = 0; i < 5; ++i) r.context[static_cast<std::size_t>(i)] = st.f64(6 + i);
      r.reward = st.f64(11);
      const std::string verdict = st.text(12);
      const auto v = parse_round_verdict(verdict);
      if (!v) throw store_error("rounds: unknown verdict `" + verdict + "` in round " + std::to_string(r.round));
      r.verdict = *v;
      r.reason = st.text(13);
      r.accepted = st.i64(14) != 0;
      r.new_labels = st.i64(15);
      r.new_transitions = st.i64(16);
      r.model_hash = st.text(17);
      const std::string phases = st.text(18);
      if (!phases.empty()) {
        const auto j = nlohmann::json::parse(phases, nullptr, /*allow_exceptions=*/false);
        if (j.is_object())
          for (const auto& [k, v] : j.items())
            if (v.is_number()) r.phase_ms[k] = v.get<double>();
      }
      r.extra_json = st.text(19);
      out.push_back(std::move(r));
    }
    return out;
  }

  /// max(round) + 1, or 0 when no round is stored.
  [[nodiscard]] std::int64_t next_round() const {
    auto& st = prepare("SELECT COALESCE(MAX(round) + 1, 0) FROM rounds");
    st.step();
    const std::int64_t n = st.i64(0);
    st.reset();
    return n;
  }

  /// Forgets what rounds `round` and later wrote (a resumed campaign redoes them from its
  /// checkpoint): their round rows, metric rows and finding instances, with each finding's
  /// instance count and last round adjusted. Findings first seen there keep their row and
  /// folder (a kill never loses a finding, even one the redo does not show again) with the
  /// instances the redo adds.
  void forget_from(std::int64_t round) {
    transaction tx(*this);
    prepare("DELETE FROM rounds WHERE round >= ?1").bind(1, round).run();
    prepare("DELETE FROM metrics WHERE round >= ?1").bind(1, round).run();
    prepare(
        "UPDATE findings SET instances = MAX(0, instances - (SELECT COUNT(*) FROM finding_instances i "
        "WHERE i.finding_id = findings.id AND i.round >= ?1)) WHERE id IN (SELECT finding_id FROM "
        "finding_instances WHERE round >= ?1)")
        .bind(1, round)
        .run();
    prepare("DELETE FROM finding_instances WHERE round >= ?1").bind(1, round).run();
    prepare(
        "UPDATE findings SET last_round = COALESCE((SELECT MAX(i.round) FROM finding_instances i "
        "WHERE i.finding_id = findings.id), first_round) WHERE last_round >= ?1")
        .bind(1, round)
        .run();
    tx.commit();
  }

  /// Records one instance of the finding `sig` seen in `round`; true when its id is new.
  /// `dir` is the instance's artifact folder relative to the campaign dir. A new finding gets
  /// status "new" and reliability -1; a known one gets instances+1 and last_round updated.
  bool add_finding(const tfg::oracle::finding_signature& sig, std::int64_t round, std::string_view message,
                   std::string_view dir) {
    const std::string id = sig.id();
    transaction tx(*this);
    auto& find = prepare("SELECT instances FROM findings WHERE id = ?1");
    find.bind(1, id);
    const bool fresh = !find.step();
    const std::int64_t seq = fresh ? 0 : find.i64(0);
    find.reset();
    if (fresh) {
      auto& ins = prepare(
          "INSERT INTO findings(id, kind, title, key, culprit_op, config_a, config_b, dtype, "
          "device, message, dir, status, first_round, last_round, instances, reliability) "
          "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,'new',?12,?12,1,-1)");
      ins.bind(1, id).bind(2, tfg::oracle::to_string(sig.kind)).bind(3, sig.title());
      ins.bind(4, sig.key()).bind(5, sig.culprit_op).bind(6, sig.config_a).bind(7, sig.config_b);
      ins.bind(8, sig.dtype).bind(9, sig.device).bind(10, message).bind(11, dir).bind(12, round);
      ins.run();
    } else {
      auto& upd = prepare(
          "UPDATE findings SET instances = instances + 1, last_round = MAX(last_round, ?2), "
          "first_round = MIN(first_round, ?2) WHERE id = ?1");
      upd.bind(1, id).bind(2, round).run();
    }
    auto& inst = prepare(
        "INSERT OR REPLACE INTO finding_instances(finding_id, slot, seq, round, message, dir) "
        "VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
    inst.bind(1, id).bind(2, seq % max_instances_per_finding).bind(3, seq).bind(4, round);
    inst.bind(5, message).bind(6, dir).run();
    tx.commit();
    return fresh;
  }

  /// Records the reproduction result of finding `id` (e.g. "reproduced", "flaky").
  /// Throws store_error when no such finding exists.
  void set_finding_status(std::string_view id, double reliability, std::string_view status) {
    transaction tx(*this);
    auto& st = prepare("UPDATE findings SET reliability = ?2, status = ?3 WHERE id = ?1");
    st.bind(1, id).bind(2, reliability).bind(3, status).run();
    if (sqlite3_changes(db_.get()) == 0) throw store_error("set_finding_status: no finding with id " + std::string(id));
    tx.commit();
  }

  /// The finding with this id, if stored.
  [[nodiscard]] std::optional<finding_row> finding(std::string_view id) const {
    auto& st = prepare(select_findings + std::string(" WHERE id = ?1"));
    st.bind(1, id);
    if (!st.step()) return std::nullopt;
    finding_row f = read_finding(st);
    st.reset();
    return f;
  }

  /// All findings, ordered by first_round (then id).
  [[nodiscard]] std::vector<finding_row> findings() const {
    auto& st = prepare(select_findings + std::string(" ORDER BY first_round, id"));
    std::vector<finding_row> out;
    while (st.step()) out.push_back(read_finding(st));
    return out;
  }

  /// The stored instances of finding `id` (at most max_instances_per_finding), oldest first.
  [[nodiscard]] std::vector<finding_instance> instances(std::string_view id) const {
    auto& st = prepare(
        "SELECT seq, round, message, dir FROM finding_instances WHERE finding_id = ?1 "
        "ORDER BY seq");
    st.bind(1, id);
    std::vector<finding_instance> out;
    while (st.step()) out.push_back({st.i64(0), st.i64(1), st.text(2), st.text(3)});
    return out;
  }

  /// Replaces the metric values of `round` by `values` (names absent from `values` are removed).
  void put_metrics(std::int64_t round, const std::map<std::string, double>& values) {
    transaction tx(*this);
    prepare("DELETE FROM metrics WHERE round = ?1").bind(1, round).run();
    auto& ins = prepare("INSERT INTO metrics(round, name, value) VALUES(?1, ?2, ?3)");
    for (const auto& [name, v] : values) ins.bind(1, round).bind(2, name).bind(3, v).run();
    tx.commit();
  }

  /// All metric rows grouped by round, ordered by round.
  [[nodiscard]] std::vector<std::pair<std::int64_t, std::map<std::string, double>>> metrics() const {
    auto& st = prepare("SELECT round, name, value FROM metrics ORDER BY round, name");
    std::vector<std::pair<std::int64_t, std::map<std::string, double>>> out;
    while (st.step()) {
      const std::int64_t r = st.i64(0);
      if (out.empty() || out.back().first != r) out.emplace_back(r, std::map<std::string, double>{});
      out.back().second[st.text(1)] = st.f64(2);
    }
    return out;
  }

  /// What a campaign's record amounts to at its last round, for comparisons of campaigns
  /// (`flowmut compare`): the last metric checkpoint, the legal rate over executed rounds, the
  /// time its rounds recorded (so a resumed campaign reports its own cost, not the wall time
  /// of the invocation that printed it) and its distinct findings.
  struct totals {
    std::map<std::string, double> metrics;  ///< the last checkpoint; empty when none
    std::int64_t rounds = 0, executed = 0, legal = 0;
    double legal_rate = 0;  ///< legal (or finding) / executed
    double minutes = 0;     ///< sum of the recorded phase times
    std::size_t findings = 0;
  };

  [[nodiscard]] totals summarise() const {
    totals t;
    const auto m = metrics();
    if (!m.empty()) t.metrics = m.back().second;
    for (const auto& r : rounds()) {
      ++t.rounds;
      if (is_executed(r.verdict)) ++t.executed;
      if (r.verdict == round_verdict::legal || r.verdict == round_verdict::finding) ++t.legal;
      for (const auto& [k, v] : r.phase_ms)
        if (k.find('.') == std::string::npos) t.minutes += v / 60000;  // "execute.load" is part of "execute"
    }
    t.legal_rate = t.executed > 0 ? static_cast<double>(t.legal) / static_cast<double>(t.executed) : 0;
    t.findings = findings().size();
    return t;
  }

  /// Number of rounds per verdict string (for the summary).
  [[nodiscard]] std::map<std::string, std::int64_t> verdict_counts() const {
    auto& st = prepare("SELECT verdict, COUNT(*) FROM rounds GROUP BY verdict");
    std::map<std::string, std::int64_t> out;
    while (st.step()) out[st.text(0)] = st.i64(1);
    return out;
  }

  /// Result of PRAGMA integrity_check: "ok" when the database is intact.
  [[nodiscard]] std::string integrity_check() const {
    auto& st = prepare("PRAGMA integrity_check");
    std::string out;
    while (st.step()) out += (out.empty() ? "" : "\n") + st.text(0);
    return out;
  }

  /// Copies the WAL into the main file (optional; SQLite also does this on its own).
  void checkpoint() { exec("PRAGMA wal_checkpoint(TRUNCATE)"); }

  /// The underlying connection, for read-only queries in tools and tests.
  [[nodiscard]] sqlite3* handle() const noexcept { return db_.get(); }

 private:
  struct db_closer {
    void operator()(sqlite3* d) const noexcept { sqlite3_close_v2(d); }
  };

  /// A cached prepared statement; step() resets it automatically when the rows are exhausted.
  class statement {
   public:
    statement(sqlite3* db, const std::string& sql) : db_(db) {
      if (sqlite3_prepare_v3(db, sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &st_, nullptr) !=
          SQLITE_OK)
        throw store_error("prepare failed: " + std::string(sqlite3_errmsg(db)) + " in: " + sql);
    }
    statement(const statement&) = delete;
    statement& operator=(const statement&) = delete;
    ~statement() { sqlite3_finalize(st_); }

    statement& bind(int i, std::int64_t v) { return check(sqlite3_bind_int64(st_, i, v)); }
    statement& bind(int i, double v) { return check(sqlite3_bind_double(st_, i, v)); }
    statement& bind(int i, std::string_view v) {
      return check(sqlite3_bind_text64(st_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
    }
    statement& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
    statement& bind(int i, const char* v) { return bind(i, std::string_view(v)); }

    /// True when a row is available; false (and reset) when done. Throws on errors.
    bool step() {
      const int rc = sqlite3_step(st_);
      if (rc == SQLITE_ROW) return true;
      const std::string msg = sqlite3_errmsg(db_);
      reset();
      if (rc == SQLITE_DONE) return false;
      throw store_error("step failed (" + std::string(sqlite3_errstr(rc)) + "): " + msg);
    }
    /// Executes a statement that returns no rows.
    void run() {
      while (step()) {
      }
    }
    void reset() {
      sqlite3_reset(st_);
      sqlite3_clear_bindings(st_);
    }
    [[nodiscard]] std::int64_t i64(int c) const { return sqlite3_column_int64(st_, c); }
    /// SQLite stores NaN as NULL; NULL reads back as NaN.
    [[nodiscard]] double f64(int c) const {
      if (sqlite3_column_type(st_, c) == SQLITE_NULL) return std::numeric_limits<double>::quiet_NaN();
      return sqlite3_column_double(st_, c);
    }
    [[nodiscard]] std::string text(int c) const {
      const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st_, c));
      const int n = sqlite3_column_bytes(st_, c);
      return p ? std::string(p, static_cast<std::size_t>(n)) : std::string{};
    }

   private:
    statement& check(int rc) {
      if (rc != SQLITE_OK) throw store_error("bind failed: " + std::string(sqlite3_errmsg(db_)));
      return *this;
    }
    sqlite3* db_;
    sqlite3_stmt* st_ = nullptr;
  };

  /// BEGIN IMMEDIATE on construction; ROLLBACK unless commit() ran.
  class transaction {
   public:
    explicit transaction(store& s) : s_(s) { s_.exec("BEGIN IMMEDIATE"); }
    transaction(const transaction&) = delete;
    transaction& operator=(const transaction&) = delete;
    void commit() {
      s_.exec("COMMIT");
      done_ = true;
    }
    ~transaction() {
      if (!done_) sqlite3_exec(s_.db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    }

   private:
    store& s_;
    bool done_ = false;
  };

  store() = default;

  static constexpr const char* select_findings =
      "SELECT id, kind, title, key, culprit_op, config_a, config_b, dtype, device, message, dir, "
      "status, first_round, last_round, instances, reliability FROM findings";

  static finding_row read_finding(const statement& st) {
    finding_row f;
    std::string* texts[] = {&f.id,       &f.kind,  &f.title,  &f.key,     &f.culprit_op, &f.config_a,
                            &f.config_b, &f.dtype, &f.device, &f.message, &f.dir,        &f.status};
    for (int i = 0; i < 12; ++i) *texts[i] = st.text(i);
    f.first_round = st.i64(12);
    f.last_round = st.i64(13);
    f.instances = st.i64(14);
    f.reliability = st.f64(15);
    return f;
  }

  void exec(const char* sql) const {
    char* err = nullptr;
    if (sqlite3_exec(db_.get(), sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : sqlite3_errmsg(db_.get());
      sqlite3_free(err);
      throw store_error(std::string(sql).substr(0, 60) + ": " + msg);
    }
  }

  /// The cached statement for `sql` (prepared on first use), reset and unbound.
  statement& prepare(const std::string& sql) const {
    auto it = stmts_.find(sql);
    if (it == stmts_.end()) it = stmts_.emplace(sql, std::make_unique<statement>(db_.get(), sql)).first;
    it->second->reset();
    return *it->second;
  }

  void init_schema() {
    sqlite3_busy_timeout(db_.get(), 10000);
    sqlite3_extended_result_codes(db_.get(), 1);
    // WAL: readers do not block the writer; FULL: the WAL is fsynced at every commit.
    auto& jm = prepare("PRAGMA journal_mode=WAL");
    const std::string mode = jm.step() ? jm.text(0) : std::string{};
    jm.reset();
    if (mode != "wal") throw store_error("cannot enable WAL journal mode (got '" + mode + "')");
    exec("PRAGMA synchronous=FULL");
    exec("PRAGMA foreign_keys=ON");

    transaction tx(*this);
    exec("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    auto& ver = prepare("SELECT value FROM meta WHERE key = 'tfg.schema_version'");
    const bool has_version = ver.step();
    const std::string version = has_version ? ver.text(0) : std::string{};
    ver.reset();
    if (has_version) {
      if (version != std::to_string(schema_version))
        throw store_error("campaign store schema version " + version + ", this build reads " +
                          std::to_string(schema_version));
    } else {
      auto& tables = prepare("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name <> 'meta'");
      tables.step();
      const auto n = tables.i64(0);
      tables.reset();
      if (n != 0) throw store_error("not a campaign store (tables present, no schema version)");
      exec(R"sql(
        CREATE TABLE rounds(
          round INTEGER PRIMARY KEY, policy TEXT NOT NULL, candidates INTEGER NOT NULL,
          op TEXT NOT NULL, site TEXT NOT NULL, arm INTEGER NOT NULL,
          ctx_l REAL, ctx_t REAL, ctx_m REAL, ctx_p REAL,
          ctx_i REAL, reward REAL, verdict TEXT NOT NULL, reason TEXT NOT NULL,
          accepted INTEGER NOT NULL, new_labels INTEGER NOT NULL, new_transitions INTEGER NOT NULL,
          model_hash TEXT NOT NULL, phase_ms TEXT NOT NULL, extra_json TEXT NOT NULL);
        CREATE TABLE findings(
          id TEXT PRIMARY KEY, kind TEXT NOT NULL, title TEXT NOT NULL, key TEXT NOT NULL,
          culprit_op TEXT NOT NULL, config_a TEXT NOT NULL, config_b TEXT NOT NULL,
          dtype TEXT NOT NULL, device TEXT NOT NULL, message TEXT NOT NULL, dir TEXT NOT NULL,
          status TEXT NOT NULL, first_round INTEGER NOT NULL, last_round INTEGER NOT NULL,
          instances INTEGER NOT NULL, reliability REAL);
        CREATE INDEX findings_by_first_round ON findings(first_round);
        CREATE TABLE finding_instances(
          finding_id TEXT NOT NULL REFERENCES findings(id) ON DELETE CASCADE,
          slot INTEGER NOT NULL, seq INTEGER NOT NULL, round INTEGER NOT NULL,
          message TEXT NOT NULL, dir TEXT NOT NULL, PRIMARY KEY(finding_id, slot));
        CREATE TABLE metrics(
          round INTEGER NOT NULL, name TEXT NOT NULL, value REAL,
          PRIMARY KEY(round, name));
      )sql");
      prepare("INSERT INTO meta(key, value) VALUES('tfg.schema_version', ?1)")
          .bind(1, std::to_string(schema_version))
          .run();
    }
    tx.commit();
  }

  std::unique_ptr<sqlite3, db_closer> db_;
  mutable std::unordered_map<std::string, std::unique_ptr<statement>> stmts_;
};

}  // namespace tfg::campaign
