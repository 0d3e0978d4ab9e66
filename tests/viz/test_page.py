"""The interactive elimination page (viz.page), stepped through in a real headless browser.

Needs Debian's ``chromium`` and ``chromium-driver`` and the ``selenium`` package (``.ci/run`` installs
them); skipped, with the reason, where they are absent.
"""
import shutil

import pytest

import mechanics
from mechanics import GROUND, Weld, algorithm_plan
from viz.layout import mechanism_positions
from viz.page import default_pair, elimination_page
from viz.views import elimination_frames, link_group

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
BROWSER, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    BROWSER is None or DRIVER is None,
    reason="no headless browser here: apt-get install chromium chromium-driver (.ci/run does)",
)


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1200"):
        options.add_argument(argument)
    options.binary_location = BROWSER
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


def _text(driver, element_id: str) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.ID, element_id).text


def test_the_page_steps_through_every_elimination_of_talos_on_its_soles(browser, tmp_path):
    """Every step of every algorithm that applies, from a local file: the step, the front and the count of
    fill edges shown equal the plan's own frames; a screenshot is kept."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    talos = mechanics.load_robot("talos", [Weld("left_sole_link", GROUND), Weld("right_sole_link", GROUND)])
    names = [name for name in mechanics.ALGORITHMS if name != "aba"]  # aba is for trees
    plans = {name: algorithm_plan(talos, name)[1] for name in names}
    page = tmp_path / "talos.html"
    page.write_text(elimination_page(plans, "talos", mechanism_positions(talos, link_group), link_group))
    browser.get(page.as_uri())
    assert not [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    body = browser.find_element(By.TAG_NAME, "body")
    for name, plan in plans.items():
        Select(browser.find_element(By.ID, "ordering-A")).select_by_value(name)
        frames = elimination_frames(plan.structure, plan, group=link_group, keep_eliminated=True)
        fill = 0
        for k, frame in enumerate(frames):
            fill += sum(1 for _, _, d in frame.graph.edges(data=True) if d["fill"])
            assert _text(browser, "step-A") == f"{frame.title} ({k + 1} of {len(frames)})", name
            front = [frame.graph.nodes[n]["label"] for n, s in frame.graph.nodes(data="state") if s == "frontal"]
            assert _text(browser, "front-A") == ", ".join(front), (name, k)
            assert int(_text(browser, "fill-A")) == fill, (name, k)
            body.send_keys(Keys.ARROW_RIGHT)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#tree-A rect.clique.current")) >= 1
    browser.save_screenshot(str(tmp_path / "talos.png"))
    assert (tmp_path / "talos.png").stat().st_size > 10_000


def test_the_page_needs_no_network():
    four_bar = mechanics.models.four_bar()
    page = elimination_page({"proxbbo": algorithm_plan(four_bar, "proxbbo")[1]}, "four bar", group=link_group)
    for needle in ("src=", "<link", "@import", "fetch(", "XMLHttpRequest"):
        assert needle not in page


def _fronts(plan) -> list:
    return [link_group(k) for step in plan.steps for k in step.frontal]


def test_the_default_pair_eliminates_in_two_different_orders():
    fig4 = mechanics.models.fig4()
    plans = {name: algorithm_plan(fig4, name)[1] for name in ("pv", "proxpv", "proxbbo", "lcaba")}
    assert default_pair(plans, link_group) == ("lcaba", "proxbbo")  # 000's contrast, Fig. 4 against Fig. 5
    del plans["lcaba"]
    first, second = default_pair(plans, link_group)
    assert _fronts(plans[first]) != _fronts(plans[second])
    assert _fronts(plans["pv"]) == _fronts(plans["proxpv"])  # why the first two would not do


def _rendered(driver, selector: str) -> list:
    """(text, height in px) of each element the selector finds, as the browser lays them out."""
    return driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])]"
        ".map(e => [e.textContent, e.getBoundingClientRect().height]);", selector)


def test_the_page_labels_its_axes_and_draws_the_clique_tree_readably(browser, tmp_path):
    """At 1,400 px: the bar chart's axes say "step" and "flops"; every clique's text is drawn at least 10 px
    tall (the tree scrolls instead of shrinking); the two panels open on orderings that differ."""
    from selenium.webdriver.support.ui import Select

    talos = mechanics.load_robot("talos", [Weld("left_sole_link", GROUND), Weld("right_sole_link", GROUND)])
    plans = {name: algorithm_plan(talos, name)[1] for name in ("pv", "proxpv", "proxbbo", "lcaba")}
    page = tmp_path / "talos.html"
    page.write_text(elimination_page(plans, "talos", mechanism_positions(talos, link_group), link_group))
    browser.get(page.as_uri())
    for slot in "AB":
        axes = dict(_rendered(browser, f"#bars-{slot} text.axis-label"))
        assert set(axes) == {"step", "flops"} and min(axes.values()) >= 10, axes
        ticks = [text for text, _ in _rendered(browser, f"#bars-{slot} text.tick")]
        assert "1" in ticks and "0" in ticks
        cliques = _rendered(browser, f"#tree-{slot} text")
        assert len(cliques) == len(plans[Select(browser.find_element("id", f"ordering-{slot}")).first_selected_option
                                         .get_attribute("value")].steps)
        assert min(height for _, height in cliques) >= 10
    chosen = [Select(browser.find_element("id", f"ordering-{slot}")).first_selected_option.get_attribute("value")
              for slot in "AB"]
    assert chosen == ["lcaba", "proxbbo"]


def test_hostile_names_read_back_on_the_page(browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from tests.viz.test_views import HOSTILE, hostile_mechanism

    mech, _ = hostile_mechanism()
    plan = algorithm_plan(mech, "proxbbo")[1]
    page = tmp_path / "hostile.html"
    page.write_text(elimination_page({"proxbbo": plan}, mech.name, mechanism_positions(mech, link_group), link_group))
    browser.get(page.as_uri())
    assert browser.title == HOSTILE
    frames = elimination_frames(plan.structure, plan, group=link_group, keep_eliminated=True)
    body = browser.find_element(By.TAG_NAME, "body")
    seen = set()
    for _ in frames:
        seen |= set(_text(browser, "front-A").split(", ")) | {_text(browser, "step-A")}
        body.send_keys(Keys.ARROW_RIGHT)
    assert f"λ {HOSTILE}" in seen
    assert any(text.startswith("step ") and f"crank {HOSTILE}'s acceleration" in text for text in seen)
